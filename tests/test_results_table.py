"""The README's "What the suite measured" table is exactly what peagle_nb.results_table makes from the results files."""

from peagle_nb import paths
from peagle_nb.results_table import markdown, rows


def test_readme_holds_the_generated_table():
    readme = (paths.repo_root() / "README.md").read_text(encoding="utf-8")
    table = markdown()
    assert table in readme, ("README.md's measured table is stale: regenerate it with "
                             "`python -m peagle_nb.results_table` and paste it under 'What the suite measured'")


def test_every_row_names_its_source_and_has_a_number():
    for measurement, peagle, eagle3, source in rows():
        assert source.startswith("`") or source.startswith("notebook"), measurement
        assert any(ch.isdigit() for ch in peagle + eagle3) or peagle in ("1",), measurement
