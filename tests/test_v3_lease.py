"""The family-v3 lease chain (peagle_nb/lab/training_runs/v3_lease.sh and v3_poll.sh) at smoke size on this CPU:
the same stages, paths and folders a GPU lease runs, so a lease is not spent finding a wrong path."""

import json
import os
import subprocess
import sys
import tarfile

import pytest

from peagle_nb.files import paths
from tests.test_family import _mini_corpus_v3

SCRIPTS = paths.repo_root() / "peagle_nb" / "lab" / "training_runs"


@pytest.mark.slow
def test_the_lease_chain_trains_the_target_and_the_pair_then_sweeps_every_temperature(tmp_path):
    corpus, out = tmp_path / "v3", tmp_path / "out"
    _mini_corpus_v3(corpus)
    out.mkdir()
    env = {**os.environ, "SMOKE": "1", "PY": sys.executable, "R": str(tmp_path / "run"), "W": str(tmp_path / "w"),
           "PEAGLE_CORPUS_V3": str(corpus), "PEAGLE_CORPUS_V3_MANIFEST": str(corpus / "manifest_v3.json"),
           "OUT": str(out)}
    # the pair in one process with one teacher pass per step (PAIR_TEACHER=shared; test_lockstep: the default's flags)
    lease = subprocess.run(["bash", str(SCRIPTS / "v3_lease.sh")], capture_output=True, text=True, timeout=900,
                           env={**env, "SEQ_LEN": "48", "PAIR_TEACHER": "shared"})
    assert lease.returncode == 0, lease.stderr
    stages = (tmp_path / "run" / "stages.txt").read_text().splitlines()
    assert [s.split(" ", 1)[1] for s in stages] == ["start", "target rc=0", "heads rc=0", "sweep t=1 rc=0",
                                                     "sweep t=0.7 rc=0", "sweep t=0 rc=0", "done"]
    heads = json.loads((tmp_path / "run" / "heads" / "family_heads.json").read_text())
    assert set(heads["heads"]) == {"v3-eagle3-r3", "v3-peagle-r3"}  # the pair alone: no ablations
    assert heads["pair_steps_run"]["r3"]["eagle3"] == heads["pair_steps_run"]["r3"]["peagle"]  # one process
    assert heads["pair_teacher"] == "shared" and heads["logs"]["v3-peagle-r3"] == "v3-pair-r3.log"
    target = (tmp_path / "run" / "target_dir.txt").read_text().strip()
    assert heads["target"] == target and heads["data"]["seq_len"] == 48  # SEQ_LEN reached the data
    for t in (1.0, 0.7, 0.0):
        doc = json.loads((tmp_path / "run" / f"engine_t{t:g}.json").read_text())
        assert [r["temperature"] for r in doc["regimes"]] == [t]
        assert doc["model"]["weights_sha256"]["target"] == heads["target_weights_sha256"]  # swept the new pair
    poll = subprocess.run(["bash", str(SCRIPTS / "v3_poll.sh"), "5", "done", "target/v3-target.tar.gz.part*"],
                          env=env, capture_output=True, text=True, timeout=60)
    assert poll.returncode == 0, poll.stderr
    with tarfile.open(out / "run.tar.gz") as tar:
        names = set(tar.getnames())
    assert {"./target_card/training_log.json", "./heads/family_heads.json", "./engine_t0.json"} <= names
    assert not any(".part" in n for n in names)  # weights come back only as asked for, beside the tar
    assert any(p.name.startswith("v3-target.tar.gz.part") for p in out.iterdir())
    # a carried target and carried heads (the first chain's) with a drafter window: no training at all, the sweep
    # on that target, windowed and named so (the heads stage itself is the first chain's: it reads the same $T)
    heads_dir = tmp_path / "w" / "heads" / "v3-heads"
    windowed = subprocess.run(["bash", str(SCRIPTS / "v3_lease.sh")], capture_output=True, text=True, timeout=900,
                              env={**env, "TARGET_DIR": target, "HEADS_DIR": str(heads_dir), "WINDOW": "4",
                                   "TEMPS": "0", "R": str(tmp_path / "run3"), "W": str(tmp_path / "w3")})
    assert windowed.returncode == 0, windowed.stderr
    stages = [s.split(" ", 1)[1] for s in (tmp_path / "run3" / "stages.txt").read_text().splitlines()]
    assert stages == ["start", "target carried rc=0", "heads carried rc=0",  # TEMPS: only this one
                      "sweep t=0 window=4 rc=0", "done"]
    doc = json.loads((tmp_path / "run3" / "engine_t0_w4.json").read_text())
    assert doc["model"]["drafter_window"] == 4
    assert doc["model"]["weights_sha256"]["target"] == heads["target_weights_sha256"]  # the carried target


def test_a_poll_on_a_fresh_machine_stops_at_once(tmp_path):
    # the machine that ran the chain went back (idle > 30 s): a poll there must not spend its seconds waiting
    env = {**os.environ, "R": str(tmp_path / "none"), "OUT": str(tmp_path)}
    poll = subprocess.run(["bash", str(SCRIPTS / "v3_poll.sh"), "300", "done"], env=env, capture_output=True,
                          text=True, timeout=20)
    assert poll.returncode == 3 and "fresh machine" in poll.stderr and "v3_lease.sh" in poll.stderr


@pytest.mark.parametrize("seq_len, gen_batch, deadline, knobs", [
    (None, "4096", "560", {}), ("512", "2048", "660", {}),
    ("512", "2048", "720", {"HEADS_BUDGET_S": "330", "HEADS_DEADLINE_S": "720", "KS": "3,5,7", "LIMIT": "8"}),
    (None, "4096", "1400", {"RUNG": "20", "HEADS_BUDGET_S": "1100", "HEADS_DEADLINE_S": "1400"}),
    (None, "4096", "1000", {"RUNG": "30", "HEADS_DEADLINE_S": "1000", "PAIR_TEACHER": "shared", "TEACHER_TF32": "1"})])
def test_the_full_size_chain_passes_the_flags_a_gpu_needs(tmp_path, seq_len, gen_batch, deadline, knobs):
    # PY=echo: every stage writes its command line instead of running, so the full-size flags (which the smoke chain
    # above does not take) are checked here; an H100 ran out of memory generating 4096 sequences of 512 at once
    env = {**os.environ, "PY": "echo", "R": str(tmp_path / "run"), "W": str(tmp_path / "w"), "TARGET_DIR": "T",
           "TEMPS": "0", **({"SEQ_LEN": seq_len} if seq_len else {}), **knobs}
    env.pop("SMOKE", None)
    run = subprocess.run(["bash", str(SCRIPTS / "v3_lease.sh")], env=env, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    heads = (tmp_path / "run" / "heads.log").read_text().split()
    assert heads[heads.index("--gen-batch") + 1] == gen_batch and heads[heads.index("--target") + 1] == "T"
    assert ("--seq-len" in heads) == bool(seq_len)
    assert heads[heads.index("--deadline-s") + 1] == deadline  # 512 positions: the data's 100 s more (542 steps at 560)
    sweep = (tmp_path / "run" / "engine_t0.log").read_text().split()
    assert sweep[sweep.index("--device") + 1] == "cuda" and sweep[sweep.index("--lengths") + 1] == "64,256"
    assert heads[heads.index("--time-budget-s") + 1] == knobs.get("HEADS_BUDGET_S", "300")
    assert sweep[sweep.index("--ks") + 1] == knobs.get("KS", "1,3,5,7")
    assert sweep[sweep.index("--limit") + 1] == knobs.get("LIMIT", "4")
    rung = knobs.get("RUNG", "3")  # the ladder's rung: trained, then swept
    assert heads[heads.index("--rungs") + 1] == rung
    assert heads[heads.index("--pair-teacher") + 1] == knobs.get("PAIR_TEACHER", "separate")
    assert ("--teacher-tf32" in heads) == ("TEACHER_TF32" in knobs)
    heads_swept = sweep[sweep.index("--heads") + 1:sweep.index("--heads") + 3]
    assert [h.rsplit("/", 1)[1] for h in heads_swept] == [f"v3-eagle3-r{rung}", f"v3-peagle-r{rung}"]


def test_temps_none_trains_the_pair_and_sweeps_nothing(tmp_path):
    env = {**os.environ, "PY": "echo", "R": str(tmp_path / "run"), "W": str(tmp_path / "w"), "TARGET_DIR": "T",
           "TEMPS": "none", "RUNG": "30", "PAIR_TEACHER": "shared", "TEACHER_TF32": "1"}
    env.pop("SMOKE", None)
    run = subprocess.run(["bash", str(SCRIPTS / "v3_lease.sh")], env=env, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    stages = [s.split(" ", 1)[1] for s in (tmp_path / "run" / "stages.txt").read_text().splitlines()]
    assert stages == ["start", "target carried rc=0", "heads rc=0", "done"]
    assert not list((tmp_path / "run").glob("engine_t*"))
