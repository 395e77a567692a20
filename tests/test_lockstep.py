"""The budget ladder's pair on equal steps: two trainers of different speeds under one time budget run the same
number of steps (``training.lockstep``), and a partner that dies does not hang the other."""

from __future__ import annotations

import json
import threading
import time

import pytest

from peagle_nb.training.lockstep import Lockstep


def _trainer(folder, me, step_s, budget_s, cap, out):
    """The shape of drafter_train's loop: budget check, lockstep, one step."""
    sync, t0, step = Lockstep(folder, me, stale_s=5.0, log=lambda s: None), time.monotonic(), 0
    for step in range(cap):
        if time.monotonic() - t0 > budget_s or not sync.may_run(step):
            break
        time.sleep(step_s)
    else:
        step = cap
    sync.stop(step)
    out[me] = step


@pytest.mark.parametrize("fast_budget,slow_budget,cap", [(0.6, 0.6, 10_000), (0.3, 0.9, 10_000), (0.9, 0.3, 10_000),
                                                         (5.0, 5.0, 12)])
def test_a_fast_and_a_slow_trainer_stop_at_the_same_step(tmp_path, fast_budget, slow_budget, cap):
    out: dict = {}
    threads = [threading.Thread(target=_trainer, args=(tmp_path, "eagle3", 0.002, fast_budget, cap, out)),
               threading.Thread(target=_trainer, args=(tmp_path, "peagle", 0.01, slow_budget, cap, out))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert out["eagle3"] == out["peagle"] > 0
    if cap == 12:
        assert out["peagle"] == 12  # the step cap, not the budget, ended both


def test_a_partner_that_never_comes_releases_the_other(tmp_path):
    logs = []
    sync = Lockstep(tmp_path, "eagle3", stale_s=0.2, log=logs.append)
    t0 = time.monotonic()
    assert sync.may_run(0) and sync.alone and "training on alone" in logs[0]
    assert sync.may_run(1) and time.monotonic() - t0 < 2  # no more waiting once alone


def test_a_partner_that_stopped_before_this_step_stops_this_one(tmp_path):
    Lockstep(tmp_path, "peagle").stop(3)
    sync = Lockstep(tmp_path, "eagle3")
    assert sync.may_run(2) and not sync.may_run(3)


def test_the_heads_command_puts_each_rungs_pair_in_lockstep_and_not_the_ablations(tmp_path, monkeypatch):
    from peagle_nb.lab.training_runs import family, family_v3
    from peagle_nb.models.target import default_path

    spawned = {}

    class Done:
        pid, returncode = 0, 0

        def __init__(self, log):
            log.parent.mkdir(parents=True, exist_ok=True)
            self.log_file = open(log, "w")  # noqa: SIM115 -- wait_all closes it

        def wait(self, timeout=None):
            return 0

    def spawn(args, log, env):
        spawned[log.stem] = args
        return Done(log)

    (tmp_path / "w" / "heads" / "lockstep" / "r1").mkdir(parents=True)
    (tmp_path / "w" / "heads" / "lockstep" / "r1" / "peagle.json").write_text('{"step": 0, "done": true}')
    monkeypatch.setattr(family, "spawn", spawn)
    monkeypatch.setattr(family_v3, "_data_info", lambda cache: {})
    family_v3.main(["heads", "--target", str(default_path()), "--out", str(tmp_path / "o"), "--work",
                    str(tmp_path / "w"), "--rungs", "1", "3", "--ablation-rung", "3", "--ablations", "zeros",
                    "--device", "cpu", "--deadline-s", "600"])
    lock = tmp_path / "w" / "heads" / "lockstep"
    assert not (lock / "r1").exists()  # a previous run's record would stop this run's pair at once
    for name, args in spawned.items():
        if name == "data":
            continue
        has = "--lockstep" in args
        assert has is (name in {"v3-eagle3-r1", "v3-peagle-r1", "v3-eagle3-r3", "v3-peagle-r3"}), name
        if has:
            assert args[args.index("--lockstep") + 1] == str(lock / name.split("-")[-1])


def test_with_a_shared_teacher_each_rungs_pair_is_one_process_and_the_ablations_stay_apart(tmp_path, monkeypatch):
    import shlex

    from peagle_nb.lab.training_runs import family, family_v3
    from peagle_nb.models.target import default_path
    from peagle_nb.training import pair as pair_trainer

    spawned = {}

    class Done:
        pid = 0

        def __init__(self, log, code):
            log.parent.mkdir(parents=True, exist_ok=True)
            self.log_file, self.returncode = open(log, "w"), code  # noqa: SIM115 -- wait_all closes it

        def wait(self, timeout=None):
            return self.returncode

    def spawn(args, log, env):
        spawned[log.stem] = args
        return Done(log, 3 if log.stem == "v3-pair-r3" else 0)

    monkeypatch.setattr(family, "spawn", spawn)
    monkeypatch.setattr(family_v3, "_data_info", lambda cache: {})
    out = tmp_path / "o"
    code = family_v3.main(["heads", "--target", str(default_path()), "--out", str(out), "--work", str(tmp_path / "w"),
                           "--rungs", "1", "3", "--ablation-rung", "3", "--ablations", "zeros", "--device", "cpu",
                           "--deadline-s", "600", "--pair-teacher", "shared", "--teacher-tf32"])
    assert sorted(spawned) == ["data", "v3-pair-r1", "v3-pair-r3", "v3-peagle-zeros-r3"]
    assert "--lockstep" not in spawned["v3-peagle-zeros-r3"] and "--teacher-tf32" in spawned["v3-peagle-zeros-r3"]
    args = spawned["v3-pair-r3"]
    assert args[:3] == ["peagle_nb.cli", "train", "pair"]
    # each method's options parse with its own trainer's parser: the pair's cap, the method's k, its own --out
    cfgs = [cfg for cfg, _ in pair_trainer.configure(pair_trainer.argparse.Namespace(
        eagle3=args[args.index("--eagle3") + 1], peagle=args[args.index("--peagle") + 1]))]
    assert [(c.kind, c.k, c.steps, c.out.name, c.teacher_tf32) for c in cfgs] == [
        ("eagle3", 7, 6000, "v3-eagle3-r3", True), ("peagle", 8, 6000, "v3-peagle-r3", True)]
    assert "--lockstep" not in shlex.split(args[args.index("--peagle") + 1])
    summary = json.loads((out / "family_heads.json").read_text())
    assert summary["pair_teacher"] == "shared" and summary["teacher_tf32"] is True
    assert summary["head_time_budget_s"] <= 600 - 25 - 2 * 90  # time kept for both heads' evaluations, in series
    assert summary["exit_codes"]["v3-eagle3-r3"] == summary["exit_codes"]["v3-peagle-r3"] == 3  # the pair's code
    assert summary["logs"]["v3-peagle-r3"] == "v3-pair-r3.log" and code == 1
