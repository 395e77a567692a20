"""The managed server's watchdog: when the owning process dies without cleanup (SIGKILL), the server's
whole process group is taken down. Exercised with plain processes (the vLLM server itself is covered in
tests/serving/test_server.py)."""

from __future__ import annotations

import subprocess
import sys
import time

import psutil
import pytest

from peagle_nb.serving._reaper import _owner_alive, start_id


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_reaper_kills_the_group_when_the_owner_dies():
    owner = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    group = subprocess.Popen(["sh", "-c", "sleep 60 & sleep 60 & wait"], start_new_session=True)
    time.sleep(0.3)
    members = [group.pid] + [c.pid for c in psutil.Process(group.pid).children(recursive=True)]
    start = start_id(owner.pid)
    reaper = subprocess.Popen([sys.executable, "-m", "peagle_nb.serving._reaper", str(owner.pid), start,
                               str(group.pid)])
    try:
        time.sleep(1.5)
        assert not any(_gone(p) for p in members)  # owner alive: nothing touched
        owner.kill()
        owner.wait()
        group.wait(timeout=20)  # reap our zombie child, as init would for a dead owner's
        reaper.wait(timeout=20)
        assert all(_gone(p) for p in members)
    finally:
        for p in (owner, group, reaper):
            if p.poll() is None:
                p.kill()


def test_a_wall_clock_step_does_not_make_a_live_owner_look_dead(monkeypatch):
    # a CI run lost its vLLM server when the VM was paused and resumed: psutil's create_time() is the boot time
    # (which follows the wall clock) plus the start in ticks, so the owner's start moved and the watchdog killed it
    import os

    me = start_id(os.getpid())
    assert _owner_alive(os.getpid(), me)
    if sys.platform.startswith("linux"):
        assert me.startswith("ticks:")
        boot, before = psutil.boot_time(), psutil.Process(os.getpid()).create_time()
        monkeypatch.setattr(psutil._pslinux, "boot_time", lambda: boot + 40.0)  # the wall clock stepped 40 s
        assert psutil.Process(os.getpid()).create_time() - before > 39  # what the old check compared: moved
        assert _owner_alive(os.getpid(), me) and start_id(os.getpid()) == me
    assert not _owner_alive(os.getpid(), "ticks:1")  # another process that once had this pid


def test_a_dead_owner_is_dead():
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    token = start_id(gone.pid)
    gone.wait()
    assert not _owner_alive(gone.pid, token)
    with pytest.raises(ProcessLookupError):
        start_id(gone.pid)
