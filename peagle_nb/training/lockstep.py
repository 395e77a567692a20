"""Two trainers kept on equal steps (the heads' budget ladder: EAGLE-3 and P-EAGLE at one rung). Explained in
notebook 08 (section 7).

The pair trains side by side under one time budget, and a one-layer EAGLE-3 head steps faster than a four-layer
P-EAGLE head: on a shared GPU the time budget alone ended rung 3 of the recorded v3 ladder at 685 vs 609 steps.
In lockstep each trainer writes, in a folder the two share, the step it is about to run (``<me>.json``), and
waits before a step until its partner has reached that step too; a trainer that stops (its time budget, its step
cap) writes how many steps it ran, and its partner stops at that count. So both run the same number of steps, and
(the learning rate following steps and time alike) the same schedule. A partner that never starts, or stops
writing for ``stale_s`` (it died), releases the other, which logs it and goes on alone.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path


class Lockstep:
    def __init__(self, folder: Path, me: str, stale_s: float = 300.0, poll_s: float = 0.002, log=print):
        self.folder, self.me, self.stale_s, self.poll_s, self.log = Path(folder), me, stale_s, poll_s, log
        self.folder.mkdir(parents=True, exist_ok=True)
        self.alone = False  # the partner died or never came: no more waiting

    def _write(self, step: int, done: bool) -> None:
        tmp = self.folder / f".{self.me}.tmp"
        tmp.write_text(json.dumps({"step": step, "done": done}))
        os.replace(tmp, self.folder / f"{self.me}.json")  # the partner never reads half a file

    def _partner(self) -> tuple[dict | None, float]:
        """The partner's last record and how many seconds ago it wrote it (None: it has not written yet)."""
        for p in self.folder.glob("*.json"):
            if p.stem != self.me:
                try:
                    return json.loads(p.read_text()), time.time() - p.stat().st_mtime
                except (OSError, json.JSONDecodeError):  # replaced while read: read again next poll
                    return {}, 0.0
        return None, 0.0

    def may_run(self, step: int) -> bool:
        """Called before running step ``step`` (0-based, = steps done so far). False: stop here, the partner
        stopped after ``step`` steps. Blocks while the partner is behind."""
        if self.alone:
            return True
        self._write(step, False)
        waited, polls = time.monotonic(), 0
        while True:
            rec, age = self._partner()
            if rec and rec.get("done"):
                if rec["step"] <= step:
                    return False
                return True  # it ran more than this trainer will reach: nothing to wait for
            if rec and rec.get("step", -1) >= step:
                return True
            # never started, or silent too long (it died): go on alone
            if (rec is None and time.monotonic() - waited > self.stale_s) or (rec and age > self.stale_s):
                self.log(f"lockstep: no word from the partner for {self.stale_s:.0f} s; training on alone")
                self.alone = True
                return True
            polls += 1  # short polls while steps are close, longer once the partner is far behind (or loading)
            time.sleep(min(0.05, self.poll_s * 2 ** (polls // 20)))

    def stop(self, steps_run: int) -> None:
        """This trainer ran ``steps_run`` steps and stops: its partner stops at the same count."""
        self._write(steps_run, True)
