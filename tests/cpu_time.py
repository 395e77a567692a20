"""Where the test run's time goes: wall time against CPU time (the test process's and its reaped children's:
notebook kernels, servers, training commands) per test phase. A pytest plugin, not a test:

    make test PYTEST_ARGS="-p tests.cpu_time"      # appends one JSON line per phase to build/cpu-time.jsonl
    .venv/bin/python -m tests.cpu_time build/cpu-time.jsonl

A CPU/wall ratio near 1 on a 2-core machine leaves a core idle; that measurement is why `make test` runs two
files at once. Children count when reaped, so a fixture's servers count at its teardown.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time
from collections import defaultdict
from pathlib import Path

import pytest

OUT = Path(os.environ.get("PEAGLE_CPU_TIME_OUT", "build/cpu-time.jsonl"))


def _cpu_s() -> float:
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def _timed(phase: str):
    @pytest.hookimpl(hookwrapper=True)
    def hook(item, *args, **kwargs):
        t0, c0 = time.monotonic(), _cpu_s()
        yield
        row = {"id": item.nodeid, "phase": phase, "wall_s": time.monotonic() - t0, "cpu_s": _cpu_s() - c0}
        OUT.parent.mkdir(parents=True, exist_ok=True)
        with OUT.open("a") as f:  # one short line per write: the two xdist workers can share the file
            f.write(json.dumps(row) + "\n")
    return hook


pytest_runtest_setup = _timed("setup")
pytest_runtest_call = _timed("call")
pytest_runtest_teardown = _timed("teardown")


def summarize(rows: list[dict]) -> dict:
    """Totals and per-file sums (slowest first) of rows written by this plugin."""
    files: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    for r in rows:
        f = files[r["id"].split("::")[0]]
        f[0] += r["wall_s"]
        f[1] += r["cpu_s"]
    wall, cpu = sum(r["wall_s"] for r in rows), sum(r["cpu_s"] for r in rows)
    return {"wall_s": wall, "cpu_s": cpu, "cores_busy": cpu / wall if wall else 0.0,
            "files": sorted(((name, w, c) for name, (w, c) in files.items()), key=lambda t: -t[1])}


if __name__ == "__main__":
    s = summarize([json.loads(line) for line in Path(sys.argv[1]).read_text().splitlines() if line.strip()])
    print(f"tests: {s['wall_s']:.0f} s of wall time, {s['cpu_s']:.0f} s of CPU ({s['cores_busy']:.2f} cores busy)")
    for name, w, c in s["files"][:30]:
        print(f"{w:8.1f} s wall {c:8.1f} s CPU  {name}")
