"""Watchdog for a managed server: ``python -m peagle_nb.serving._reaper OWNER_PID OWNER_START_ID SERVER_PGID``.

If the owning Python process dies without running its cleanup (SIGKILL, a notebook kernel killed on a
timeout), this process takes the server's whole process group down (SIGTERM, then SIGKILL). It exits
when the group is gone. Started and stopped by ``ManagedVllmServer``.
"""

from __future__ import annotations

import os
import signal
import sys
import time


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


def start_id(pid: int) -> str:
    """An id of the process's start that stays the same for its whole life. On Linux its start in clock ticks since
    boot (``/proc/PID/stat``), which no change of the wall clock moves: psutil's ``create_time()`` adds the boot
    time, which moves with the wall clock (a VM paused and resumed, an NTP step), and once made a live owner look
    dead and its server killed. Elsewhere psutil's ``create_time()``, compared within a second."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except FileNotFoundError:
        if sys.platform.startswith("linux"):
            raise ProcessLookupError(pid) from None
    else:
        return "ticks:" + stat[stat.rindex(b")") + 2:].split()[19].decode()  # field 22, starttime
    import psutil

    return f"time:{psutil.Process(pid).create_time()!r}"


def _owner_alive(pid: int, start: str) -> bool:
    import psutil

    try:
        now = start_id(pid)
        if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
            return False
    except (ProcessLookupError, psutil.NoSuchProcess):
        return False
    if now.startswith("time:") and start.startswith("time:"):
        return abs(float(now[5:]) - float(start[5:])) < 1.0
    return now == start


def main(owner: int, start: str, pgid: int) -> int:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C in a terminal reaches the owner, not us
    while _group_alive(pgid):
        if not _owner_alive(owner, start):
            try:
                os.killpg(pgid, signal.SIGTERM)
                for _ in range(40):
                    time.sleep(0.25)
                    if not _group_alive(pgid):
                        return 0
                os.killpg(pgid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            return 0
        time.sleep(1.0)
    return 0


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]), sys.argv[2], int(sys.argv[3])))
