"""Execute the notebook series with papermill and collect what each notebook recorded.

``peagle-nb run-notebooks`` and the notebook tests both call :func:`execute_notebook`, so CI runs
exactly what a user runs. Each notebook executes in a child process (its own kernel, cwd set to
``notebooks/``) so a per-notebook timeout can stop it and its kernel cleanly.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from peagle_nb.files import paths
from peagle_nb.machine import runtime_env
from peagle_nb.lab.notebooks._execute_one import TIMEOUT_EXIT
from peagle_nb.notebook.record import read_records
from peagle_nb.notebook.series import SERIES, NotebookSpec



@dataclass
class NotebookResult:
    notebook: str
    status: str  # "ok", "failed", "timeout"
    seconds: float
    output_path: str
    parameters: dict[str, Any]
    records: dict[str, Any] = field(default_factory=dict)
    error: str | None = None  # "cell N: ExcName: message" for failures

    @property
    def skipped(self) -> dict[str, Any]:
        return {k[len("skipped."):]: v for k, v in self.records.items() if k.startswith("skipped.")}


class NotebookFailed(RuntimeError):
    def __init__(self, result: NotebookResult):
        self.result = result
        super().__init__(f"{result.notebook} {result.status}: {result.error}")


def _failure_from_executed(output_path: Path) -> str | None:
    """Name the first cell that raised, from papermill's executed notebook."""
    if not output_path.exists():
        return None
    nb = json.loads(output_path.read_text(encoding="utf-8"))
    code_index = 0
    for cell in nb.get("cells", []):
        tags = cell.get("metadata", {}).get("tags") or []
        if cell.get("cell_type") != "code" or "injected-parameters" in tags:
            continue  # number cells as the author sees them, without papermill's injected one
        code_index += 1
        for output in cell.get("outputs", []) or []:
            if output.get("output_type") == "error":
                ename, evalue = output.get("ename", "Error"), output.get("evalue", "")
                first_line = (cell.get("source") if isinstance(cell.get("source"), str)
                              else "".join(cell.get("source", []))).strip().splitlines()
                where = f"code cell {code_index}" + (f" ({first_line[0][:60]!r})" if first_line else "")
                return f"{where}: {ename}: {evalue[:500]}"
    return None


def execute_notebook(
    notebook: str | Path,
    out_dir: str | Path,
    parameters: dict[str, Any] | None = None,
    timeout_s: int = 900,
    raise_on_failure: bool = True,
) -> NotebookResult:
    """Run one notebook with papermill in a child process; return its status and recorded numbers."""
    src = Path(notebook)
    if not src.is_absolute():
        src = paths.notebooks_dir() / src
    if not src.exists():
        raise FileNotFoundError(f"notebook not found: {src}")
    out_dir = Path(out_dir).resolve()  # the child runs in notebooks/, so relative paths would move
    out_dir.mkdir(parents=True, exist_ok=True)
    dst = out_dir / src.name
    params = dict(parameters or {})
    env = dict(os.environ)
    runtime_env.apply_defaults(env)
    env.setdefault("PEAGLE_NB_ROOT", str(paths.repo_root()))
    env["PEAGLE_NB_NOTEBOOK"] = src.name  # lets a kernel resolve SMOKE = None for this notebook (modes.py)
    env["PYTHONUNBUFFERED"] = "1"
    cmd = [sys.executable, "-m", "peagle_nb.lab.notebooks._execute_one", str(src), str(dst), json.dumps(params),
           str(timeout_s)]
    log_path = out_dir / (src.stem + ".log")
    t0 = time.monotonic()
    with open(log_path, "w", encoding="utf-8") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=src.parent,
                                start_new_session=True)
        try:
            rc = proc.wait(timeout=timeout_s + 30)
            status = {0: "ok", TIMEOUT_EXIT: "timeout"}.get(rc, "failed")
        except subprocess.TimeoutExpired:
            status = "timeout"
        except BaseException:
            _stop(proc)
            raise
        finally:
            if proc.poll() is None:
                _stop(proc)
    seconds = time.monotonic() - t0
    records = read_records(dst) if dst.exists() else {}
    error = None
    if status != "ok":
        error = _failure_from_executed(dst) or (
            f"no cell error recorded; see {log_path}" if status == "failed"
            else f"exceeded the {timeout_s} s budget; see {log_path}")
        if status == "timeout":
            error = f"timeout: a cell ran past the {timeout_s} s budget ({error})"
    result = NotebookResult(src.name, status, round(seconds, 1), str(dst), params, records, error)
    if status != "ok" and raise_on_failure:
        raise NotebookFailed(result)
    return result


def _stop(proc: subprocess.Popen) -> None:
    """SIGTERM the child's process group (papermill then shuts its kernel down), SIGKILL if it lingers."""
    for sig, wait in ((signal.SIGTERM, 20), (signal.SIGKILL, 5)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def select(only: list[str] | None = None) -> list[NotebookSpec]:
    if not only:
        return list(SERIES)
    wanted = {o.zfill(2) if o.isdigit() else o for o in only}
    chosen = [s for s in SERIES if s.number in wanted or s.filename in wanted or s.slug in wanted]
    unknown = wanted - {s.number for s in chosen} - {s.filename for s in chosen} - {s.slug for s in chosen}
    if unknown:
        raise SystemExit(f"unknown notebook(s): {', '.join(sorted(unknown))}; "
                         f"known: {', '.join(s.number for s in SERIES)}")
    return chosen


def run_series(
    smoke: bool | None,
    out_dir: str | Path,
    only: list[str] | None = None,
    fail_fast: bool = False,
    timeout_scale: float = 1.0,
    echo=lambda msg: print(msg, flush=True),
    report: bool = True,
) -> dict[str, Any]:
    """Run the series in order; write ``summary.json`` (and ``report.html``) in ``out_dir``; return the summary.

    ``smoke=None`` runs each notebook in the mode :func:`peagle_nb.notebook.modes.decide_smoke` picks for
    this machine (what ``peagle-nb env`` shows); ``True`` / ``False`` force smoke / full everywhere.
    """
    from peagle_nb.machine.capabilities import detect
    from peagle_nb.notebook.modes import decide_smoke

    caps = detect()
    specs = select(only)
    out_dir = Path(out_dir).resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    results: list[NotebookResult] = []
    for i, spec in enumerate(specs, 1):
        nb_smoke, why = (smoke, "forced") if smoke is not None else decide_smoke(spec, caps)
        params = {"SMOKE": bool(nb_smoke)}
        budget = int(spec.timeout_s * timeout_scale * (1 if nb_smoke else 4))
        mode = "smoke" if nb_smoke else "full"
        echo(f"[{i}/{len(specs)}] {spec.filename} ({mode}{'' if smoke is not None else ': ' + why}, "
             f"budget {budget} s) ...")
        res = execute_notebook(spec.filename, out_dir, params, timeout_s=budget, raise_on_failure=False)
        results.append(res)
        skipped = f", {len(res.skipped)} gated cell(s) skipped" if res.skipped else ""
        echo(f"    {res.status} in {res.seconds:.1f} s, {len(res.records)} number(s) recorded{skipped}"
             + (f"\n    FAILED at {res.error}" if res.error else ""))
        if res.status != "ok" and fail_fast:
            break
    summary = {
        "mode": "auto" if smoke is None else ("smoke" if smoke else "full"),
        "created_unix": int(time.time()),
        "environment": caps.to_dict(),
        "notebooks": [asdict(r) | {"skipped": r.skipped} for r in results],
        "failed": [r.notebook for r in results if r.status != "ok"],
    }
    if report:
        from peagle_nb.lab.notebooks.report import write_report

        executed = [Path(r.output_path) for r in results if Path(r.output_path).exists()]
        if executed:
            summary["report"] = str(write_report(executed, out_dir / "report.html", echo=echo))
    (out_dir / "summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    return summary
