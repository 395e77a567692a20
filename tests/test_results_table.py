"""The README's "What the suite measured" table is exactly what peagle_nb.lab.records.results_table makes from the
results files."""

from peagle_nb.files import paths
from peagle_nb.lab.records.results_table import markdown, rows


def test_readme_holds_the_generated_table():
    readme = (paths.repo_root() / "README.md").read_text(encoding="utf-8")
    table = markdown()
    assert table in readme, ("README.md's measured table is stale: regenerate it with "
                             "`python -m peagle_nb.lab.records.results_table` and paste it under "
                             "'What the suite measured'")


def test_every_row_is_made_from_a_results_file_it_names():
    """No row is typed by hand: each names a results file that exists, and its cells hold numbers."""
    for measurement, peagle, eagle3, source in rows():
        assert source.startswith("`") and source.endswith("`"), measurement
        assert (paths.results_dir() / source.strip("`")).is_file(), (measurement, source)
        assert any(ch.isdigit() for ch in peagle + eagle3), measurement


def test_drafter_passes_row_reads_the_hooked_vllm_runs():
    from peagle_nb.lab.records.results_table import _vllm_rows

    runs = [{"method": "peagle", "k": 3, "drafter_passes_per_step": 1.0},
            {"method": "eagle3", "k": 3, "drafter_passes_per_step": 3.0},
            {"method": "eagle3", "k": 5, "drafter_passes_per_step": 4.5},
            {"method": "eagle3", "k": 7, "drafter_passes_per_step": None}]
    (row,) = _vllm_rows(runs)
    assert row[1:] == ("1.00 (K=3)", "3.00 (K=3) / 4.50 (K=5)", "`vllm_cpu.json`")
    assert _vllm_rows(runs[1:]) == []  # no P-EAGLE run hooked: no row
