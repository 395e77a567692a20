"""The notebook runner: failures name the notebook and cell, timeouts stop the kernel, summaries collect records."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from peagle_nb.cli import main as cli_main
from peagle_nb.notebook.authoring import code, md, params, write_notebook
from peagle_nb.notebook.runner import NotebookFailed, execute_notebook


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
    assert nb["records"]["env.matmul_size"] == 256  # smoke size chosen by the notebook itself
    assert (out / "00_setup_and_environment_check.ipynb").exists()
    assert "[1/1] 00_setup_and_environment_check.ipynb" in capsys.readouterr().out
