"""The two-command GPU recipe, end to end on a CPU at smoke size: command A trains targets side by side and
keeps the best on validation; command B builds sampled drafter data once and trains EAGLE-3, P-EAGLE and
P-EAGLE without Japanese side by side, then measures each per domain. Outputs: at most 8 files, each a
packed model folder, a summary or a log."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest
import torch

from peagle_nb.lab.training_runs import family


def _check_out(out, expected: set[str]) -> None:
    files = list(out.rglob("*"))
    assert {f.name for f in files} == expected and len(files) <= 8
    assert all(f.is_file() and f.parent == out and f.stat().st_size < family.MAX_OUT_FILE for f in files)


@pytest.mark.slow
def test_both_commands_end_to_end_at_smoke_size(tmp_path):
    from peagle_nb.lab.benchmarks.domain_eval import check_recomputes
    from peagle_nb.models.heads import load_head
    from peagle_nb.models.target import load_target
    from peagle_nb.files.results import read_results

    out_a, out_b, work = tmp_path / "outA", tmp_path / "outB", tmp_path / "work"
    assert family.main(["target", "--smoke", "--out", str(out_a), "--work", str(work)]) == 0
    _check_out(out_a, {"tiny-target.tar.gz", "family_target.json", "family_target.log"})
    folder = family.unpack(out_a / "tiny-target.tar.gz", tmp_path / "models")
    assert folder.name == "tiny-target"
    log = json.loads((folder / "training_log.json").read_text())
    sel = log["selection"]
    assert [r["steps"] for r in sel["runs"]] == [20, 40]
    assert sel["kept"] == min(sel["runs"], key=lambda r: r["mean_validation_loss"])["name"]
    assert log["steps_run"] == int(sel["kept"].removeprefix("steps"))
    assert set(log["continuations"]) == {"prose", "code", "ja"}
    card = (folder / "README.md").read_text()
    assert "## How this run was chosen" in card and "## Does it loop?" in card and family.A_COMMAND in card
    load_target(folder)  # the packed folder is a loadable model

    assert family.main(["heads", "--smoke", "--target", str(folder), "--out", str(out_b), "--work", str(work)]) == 0
    _check_out(out_b, {"tiny-eagle3.tar.gz", "tiny-peagle.tar.gz", "tiny-peagle-no-ja.tar.gz", "domain_shift.json",
                       "family_heads.json", "family_heads.log"})
    heads = {n: family.unpack(out_b / f"{n}.tar.gz", tmp_path / "heads") for n in family.HEAD_NAMES}
    logs = {n: json.loads((p / "training_log.json").read_text()) for n, p in heads.items()}
    assert {lg["steps_run"] for lg in logs.values()} == {8}  # equal steps
    full, no_ja = logs["tiny-peagle"]["data"], logs["tiny-peagle-no-ja"]["data"]
    assert full["decoding"] == "all sampled from the target at temperature 1" and full["sequences_per_domain"]["ja"] > 0
    assert no_ja["excluded_domains"] == ["ja"] and no_ja["sequences_per_domain"]["ja"] == 0
    assert no_ja["n_sequences"] == full["n_sequences"] - full["sequences_per_domain"]["ja"]
    e3, pe = load_head(heads["tiny-eagle3"]), load_head(heads["tiny-peagle"])
    assert torch.equal(e3.d2t, pe.d2t)  # the same data -> the same draft vocabulary
    assert all(any(n.startswith("Trained by `" + family.B_COMMAND) for n in lg["notes"]) for lg in logs.values())
    doc = read_results(out_b / "domain_shift.json")
    check_recomputes(doc)
    assert {(r["head"], r["prompt_set"], r["mode"]) for r in doc["runs"]} == {
        (h, s, m) for h in ("eagle3", "peagle", "peagle-no-ja") for s in ("prose", "code", "ja")
        for m in ("greedy", "sampled")}
    shift = doc["summary"]["domain_shift"]["peagle vs peagle-no-ja"]
    assert shift["prompt_set"] == "ja" and set(shift) >= {"greedy", "sampled"}
    assert doc["summary"]["by_head"]["peagle"]["ja"]["sampled"]["tau"]["n"] == 2  # two seeds at smoke size


def test_wait_all_ends_a_process_past_the_deadline():
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    proc.log_file = open(os.devnull, "w")  # noqa: SIM115 -- wait_all closes it
    t0 = time.monotonic()
    codes = family.wait_all({"sleeper": proc}, timeout_s=1.0)
    assert codes["sleeper"] != 0 and proc.poll() is not None and time.monotonic() - t0 < 30


def test_pack_refuses_a_file_over_the_return_limit(tmp_path, monkeypatch):
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "w.bin").write_bytes(os.urandom(4096))
    info = family.pack(tmp_path / "m", tmp_path / "m.tar.gz", arcname="tiny-x")
    assert info["bytes"] == (tmp_path / "m.tar.gz").stat().st_size
    assert family.unpack(tmp_path / "m.tar.gz", tmp_path / "x").name == "tiny-x"
    monkeypatch.setattr(family, "MAX_OUT_FILE", 1024)
    with pytest.raises(SystemExit, match="over the 0 MiB"):
        family.pack(tmp_path / "m", tmp_path / "m2.tar.gz")


def test_heads_without_a_target_is_a_clear_error(tmp_path):
    with pytest.raises(SystemExit, match="run command A"):
        family.main(["heads", "--smoke", "--target", str(tmp_path / "none"), "--out", str(tmp_path / "o"),
                     "--work", str(tmp_path / "w")])
