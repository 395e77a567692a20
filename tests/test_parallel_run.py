"""`make test` runs test files two at a time (pytest-xdist): heaviest files first, whole files per worker."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from tests.conftest import REPO, heavy_files_first


@dataclass
class FakeItem:
    path: Path
    name: str
    marks: set[str] = field(default_factory=set)

    def get_closest_marker(self, name):
        return name if name in self.marks else None


def test_heavy_files_go_first_and_each_file_stays_together_in_order():
    a, b, c, d = (Path(f"tests/test_{x}.py") for x in "abcd")
    items = [FakeItem(a, "a1"), FakeItem(a, "a2"),
             FakeItem(b, "b1"), FakeItem(b, "b2", {"vllm"}),
             FakeItem(c, "c1", {"notebook", "slow"}),
             FakeItem(d, "d1", {"slow"}), FakeItem(d, "d2")]
    heavy_files_first(items)
    assert [i.name for i in items] == ["c1", "d1", "d2", "b1", "b2", "a1", "a2"]


def test_make_test_keeps_that_order_and_the_extra_that_provides_xdist():
    makefile = (REPO / "Makefile").read_text()
    recipe = makefile.split("\ntest: install\n", 1)[1].splitlines()[0]
    # xdist would otherwise reorder the files by their number of tests
    assert "-n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder" in recipe
    assert "pytest-xdist>=" in (REPO / "pyproject.toml").read_text()


def test_the_cpu_time_summary_adds_phases_per_file():
    from tests.cpu_time import summarize

    rows = [{"id": "tests/a.py::t1", "phase": "setup", "wall_s": 1.0, "cpu_s": 0.5},
            {"id": "tests/a.py::t1", "phase": "call", "wall_s": 3.0, "cpu_s": 5.5},
            {"id": "tests/b.py::t", "phase": "call", "wall_s": 6.0, "cpu_s": 6.0}]
    s = summarize(rows)
    assert (s["wall_s"], s["cpu_s"], s["cores_busy"]) == (10.0, 12.0, 1.2)
    assert s["files"] == [("tests/b.py", 6.0, 6.0), ("tests/a.py", 4.0, 6.0)]


def test_files_that_start_vllm_are_spread_apart():
    f = {x: Path(f"tests/test_{x}.py") for x in ("s1", "s2", "n1", "n2", "n3", "e1", "e2", "p")}
    marks = {"s1": {"notebook", "slow", "vllm"}, "s2": {"notebook", "slow", "vllm"}, "n1": {"notebook", "slow"},
             "n2": {"notebook", "slow"}, "n3": {"notebook"}, "e1": {"vllm"}, "e2": {"vllm"}, "p": set()}
    items = [FakeItem(f[x], x, marks[x]) for x in f]
    heavy_files_first(items)
    # the two servers no longer start side by side; heavier files still go first wherever the gap allows
    assert [i.name for i in items] == ["s1", "n1", "n2", "s2", "n3", "p", "e1", "e2"]  # e1, e2: nothing left between


def test_vllm_files_keep_their_weight_order_when_nothing_separates_them():
    a, b = Path("tests/test_a.py"), Path("tests/test_b.py")
    items = [FakeItem(a, "a", {"vllm"}), FakeItem(b, "b", {"vllm", "notebook"})]
    heavy_files_first(items)
    assert [i.name for i in items] == ["b", "a"]
