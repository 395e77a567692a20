"""Watchdog for a managed server: ``python -m peagle_nb.serving._reaper OWNER_PID OWNER_START SERVER_PGID``.

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


def _owner_alive(pid: int, start: float) -> bool:
    import psutil

    try:
        p = psutil.Process(pid)
        return abs(p.create_time() - start) < 1.0 and p.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def main(owner: int, start: float, pgid: int) -> int:
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
    sys.exit(main(int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])))
