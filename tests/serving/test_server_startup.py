"""ManagedVllmServer's start-up guards without vLLM: a start whose log goes silent is restarted once (and a
second stall fails with the log's end), a port it chose that another process takes is replaced (one the caller
asked for never is), and the server never inherits what an in-process engine left in os.environ. A stand-in
HTTP server plays vLLM so these run in seconds."""

from __future__ import annotations

import os
import socket
import sys
import textwrap

import pytest

from peagle_nb.serving import server
from peagle_nb.serving.server import ManagedVllmServer, PortInUseError, ServerStartupError

# Stalls silently on the attempts listed in STALLS (counted in a file), then answers /health like vLLM.
_STAND_IN = textwrap.dedent('''
    import http.server, os, sys, time
    count_file, stalls = sys.argv[1], int(sys.argv[2])
    n = int(open(count_file).read()) if os.path.exists(count_file) else 0
    open(count_file, "w").write(str(n + 1))
    print("starting", n, flush=True)
    if n < stalls:
        time.sleep(600)
    class Health(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200); self.end_headers()
    http.server.HTTPServer(("127.0.0.1", int(sys.argv[3])), Health).serve_forever()
''')


class _StandIn(ManagedVllmServer):
    def __init__(self, tmp_path, stalls: int):
        script = tmp_path / "stand_in.py"
        script.write_text(_STAND_IN)
        self._script, self._count, self._stalls = script, tmp_path / "count", stalls
        super().__init__([], startup_timeout_s=30, stall_s=2, log_path=tmp_path / "stand_in.log")

    @property
    def command(self) -> list[str]:
        return [sys.executable, str(self._script), str(self._count), str(self._stalls), str(self.port)]


def test_a_stalled_start_is_restarted_once_and_then_serves(tmp_path, capsys):
    with _StandIn(tmp_path, stalls=1) as srv:
        assert srv.restarts == 1 and srv.is_running()
    assert "stalled" in capsys.readouterr().err
    assert srv.proc is None


def test_a_second_stall_fails_with_the_log_and_leaves_nothing(tmp_path):
    srv = _StandIn(tmp_path, stalls=2)
    srv.startup_timeout_s = 6
    with pytest.raises(ServerStartupError, match="did not answer") as err:
        srv.start()
    assert "starting 1" in str(err.value)  # the second attempt's log is quoted
    assert srv.proc is None and srv.restarts == 1


def test_the_server_does_not_inherit_an_in_process_engines_variables(monkeypatch):
    monkeypatch.setitem(server._ENV_AT_IMPORT, "LD_PRELOAD", "/user/chose/this.so")
    monkeypatch.setenv("LD_PRELOAD", "/site-packages/torch/lib/libgomp.so.1")  # as vLLM's CPU worker sets it
    monkeypatch.setenv("VLLM_DIST_IDENT", "vllm_dist_stale")
    monkeypatch.setenv("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    monkeypatch.setenv("PEAGLE_TEST_KEEP", "1")
    monkeypatch.setattr(server, "_vllm_cpu_build", lambda: False)  # the CPU build's own default: the test below
    env = server.server_environment({"VLLM_CPU_KVCACHE_SPACE": "3"})
    assert "VLLM_DIST_IDENT" not in env and "VLLM_ENABLE_V1_MULTIPROCESSING" not in env
    assert env["LD_PRELOAD"] == "/user/chose/this.so"  # what the user had before any engine ran is kept
    assert env["PEAGLE_TEST_KEEP"] == "1" and env["VLLM_CPU_KVCACHE_SPACE"] == "3"
    assert env["HF_HUB_OFFLINE"] == os.environ.get("HF_HUB_OFFLINE", "1")


def test_on_vllms_cpu_build_the_engine_core_runs_the_model_itself_unless_the_user_said_otherwise(monkeypatch):
    # no worker process under the engine core (a start ~10 s shorter); what the user set before import is kept
    monkeypatch.setattr(server, "_vllm_cpu_build", lambda: True)
    monkeypatch.delenv("VLLM_ENABLE_V1_MULTIPROCESSING", raising=False)
    monkeypatch.delitem(server._ENV_AT_IMPORT, "VLLM_ENABLE_V1_MULTIPROCESSING", raising=False)
    assert server.server_environment()["VLLM_ENABLE_V1_MULTIPROCESSING"] == "0"
    assert server.server_environment({"VLLM_ENABLE_V1_MULTIPROCESSING": "1"})["VLLM_ENABLE_V1_MULTIPROCESSING"] == "1"
    monkeypatch.setitem(server._ENV_AT_IMPORT, "VLLM_ENABLE_V1_MULTIPROCESSING", "1")
    assert server.server_environment()["VLLM_ENABLE_V1_MULTIPROCESSING"] == "1"
    monkeypatch.setattr(server, "_vllm_cpu_build", lambda: False)  # vLLM's CUDA build: nothing changes
    monkeypatch.delitem(server._ENV_AT_IMPORT, "VLLM_ENABLE_V1_MULTIPROCESSING")
    assert "VLLM_ENABLE_V1_MULTIPROCESSING" not in server.server_environment()


# Fails as vLLM does when another process bound its port first (on the attempts listed), then serves.
_LOSES_PORT = textwrap.dedent('''
    import http.server, os, sys
    count_file, losses = sys.argv[1], int(sys.argv[2])
    n = int(open(count_file).read()) if os.path.exists(count_file) else 0
    open(count_file, "w").write(str(n + 1))
    if n < losses:
        sys.exit("OSError: [Errno 98] Address already in use")
    class Health(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200); self.end_headers()
    http.server.HTTPServer(("127.0.0.1", int(sys.argv[3])), Health).serve_forever()
''')


class _LosesPort(_StandIn):
    def __init__(self, tmp_path, losses: int, port: int | None = None):
        script = tmp_path / "loses_port.py"
        script.write_text(_LOSES_PORT)
        self._script, self._count, self._stalls = script, tmp_path / "count", losses
        ManagedVllmServer.__init__(self, [], port=port, startup_timeout_s=30, log_path=tmp_path / "stand_in.log")


def _listening(port: int | None = None) -> socket.socket:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("127.0.0.1", port or 0))
    s.listen()
    return s


def test_a_chosen_port_taken_before_the_start_is_replaced_by_a_free_one(tmp_path):
    srv = _LosesPort(tmp_path, losses=0)
    with _listening(srv.port) as thief:  # another process binds the port between choosing it and starting
        with srv:
            assert srv.port != thief.getsockname()[1] and srv.is_running() and srv.restarts == 0


def test_a_chosen_port_taken_before_vllm_binds_it_starts_again_on_another(tmp_path, capsys):
    srv = _LosesPort(tmp_path, losses=1)
    first = srv.port
    with srv:
        assert srv.is_running() and srv.restarts == 1 and srv.port != first
    assert f"port {first} was taken" in capsys.readouterr().err
    assert srv.proc is None


def test_a_port_that_keeps_being_taken_fails_with_vllms_words_and_leaves_nothing(tmp_path):
    srv = _LosesPort(tmp_path, losses=10)
    with pytest.raises(ServerStartupError, match="Address already in use"):
        srv.start()
    assert srv.proc is None and srv.restarts == server._PORT_MOVES


def test_a_port_the_caller_asked_for_is_never_changed(tmp_path):
    with _listening() as thief:
        taken = thief.getsockname()[1]
        with pytest.raises(PortInUseError, match=f"port {taken} on 127.0.0.1 is already in use"):
            _LosesPort(tmp_path, losses=0, port=taken).start()
    free = server.free_port()
    srv = _LosesPort(tmp_path, losses=1, port=free)  # vLLM's own bind fails: no second port behind the user's back
    with pytest.raises(ServerStartupError, match="Address already in use"):
        srv.start()
    assert srv.port == free and srv.proc is None and srv.restarts == 0
