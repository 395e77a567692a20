"""`peagle-nb serve` from the command line, as a user runs it: ready line, answers, SIGTERM leaves nothing."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import psutil
import pytest

from peagle_nb.serving.presets import get_preset, local_models_ready

pytestmark = [pytest.mark.vllm, pytest.mark.slow]


def _server_processes(port: int) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        cmd = proc.info.get("cmdline") or []
        if "--port" in cmd and str(port) in cmd:
            found.append(proc)
    return found


def test_serve_cli_answers_and_sigterm_stops_everything(tmp_path):
    if not local_models_ready(get_preset("tiny-peagle")):
        pytest.fail("data/models/tiny-target and tiny-peagle must be committed for this test")
    exe = Path(sys.executable).parent / "peagle-nb"  # the console script, as a user runs it
    cli = [str(exe) if exe.exists() else sys.executable, *([] if exe.exists() else ["-m", "peagle_nb.cli"]),
           "serve", "--preset", "tiny-peagle", "--k", "3", "--startup-timeout", "400",
           "--log", str(tmp_path / "server.log")]
    proc = subprocess.Popen(cli, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    port = None
    lines = []
    try:
        deadline = time.time() + 600  # a stalled start is retried once (150 s)
        while time.time() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            lines.append(line)
            m = re.search(r"ready after \d+ s: http://127\.0\.0\.1:(\d+)/v1", line)
            if m:
                port = int(m.group(1))
                break
        assert port, "no ready line:\n" + "".join(lines[:8] + ["...\n"] + lines[-30:])
        body = json.dumps({"model": json.loads(urllib.request.urlopen(
            f"http://127.0.0.1:{port}/v1/models", timeout=30).read())["data"][0]["id"],
            "prompt": "def add(a, b):", "max_tokens": 8, "temperature": 0}).encode()
        req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/completions", body,
                                     {"Content-Type": "application/json"})
        reply = json.loads(urllib.request.urlopen(req, timeout=60).read())  # noqa: S310 - local server
        assert reply["choices"][0]["text"]
        assert _server_processes(port), "the vLLM server process should be running now"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0
        rest = proc.stdout.read()
        assert "num_drafts" in rest or "tau" in rest, rest[-2000:]  # metrics printed on the way out
        deadline = time.time() + 20
        while _server_processes(port) and time.time() < deadline:
            time.sleep(0.5)
        assert not _server_processes(port), "vLLM server processes survived `peagle-nb serve` SIGTERM"
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
