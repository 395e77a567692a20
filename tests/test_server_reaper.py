"""The managed server's watchdog: when the owning process dies without cleanup (SIGKILL), the server's
whole process group is taken down. Exercised with plain processes (the vLLM server itself is covered in
tests/serving/test_server.py)."""

from __future__ import annotations

import subprocess
import sys
import time

import psutil


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
    start = psutil.Process(owner.pid).create_time()
    reaper = subprocess.Popen([sys.executable, "-m", "peagle_nb.serving._reaper", str(owner.pid), repr(start),
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
