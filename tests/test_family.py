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
from pathlib import Path

import pytest
import torch

from peagle_nb.files import paths
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


def _mini_corpus_v3(folder, chars: int = 60_000) -> dict:
    """A corpus-v3-shaped folder (shards + manifest) cut from the committed v1 corpus."""
    import gzip
    import hashlib

    from peagle_nb.text.corpus import load_documents

    folder.mkdir(parents=True)
    shards = []
    for domain in ("prose", "code", "ja"):
        for split in ("train", "validation", "heldout"):
            docs, total = [], 0
            for i, text in enumerate(load_documents(domain, split)):
                docs.append({"id": f"{domain}/{split}/{i}", "text": text})
                total += len(text)
                if total > (chars if split == "train" else chars // 4):
                    break
            name = f"{domain}-{split}-000.jsonl.gz"
            data = gzip.compress("".join(json.dumps(d) + "\n" for d in docs).encode(), mtime=0)
            (folder / name).write_bytes(data)
            shards.append({"file": name, "domain": domain, "split": split, "bytes": len(data),
                           "sha256": hashlib.sha256(data).hexdigest(), "documents": len(docs)})
    manifest = {"shards": shards, "totals": {}}
    (folder / "manifest_v3.json").write_text(json.dumps(manifest))
    return manifest


def test_family_v3_target_command_line_reaches_command_a_with_v3s_defaults(tmp_path, monkeypatch):
    # the v3 target's training itself runs once, inside `family all --family v3` (tests/test_family_v3.py)
    seen = []
    monkeypatch.setattr(family, "target_command", lambda args: seen.append(args) or 0)
    assert family.main(["target", "--family", "v3", "--smoke", "--runs", "6", "--out", str(tmp_path / "o")]) == 0
    assert family.main(["target", "--family", "v3", "--out", str(tmp_path / "o")]) == 0
    smoke, full = seen
    assert (smoke.family, smoke.runs, smoke.continuation_tokens, smoke.deadline_s) == ("v3", [6], 256, 1800.0)
    assert (full.runs, full.time_budget_s, full.deadline_s) == (None, 600.0, 900.0)
    assert family._a_command(smoke).endswith("--family v3 --smoke")
    tiny_tokenizer = str(paths.models_dir() / family.TARGET_NAME)
    assert family._family_flags(smoke) == [*family.V3_DATA_FLAGS, "--tokenizer-from", tiny_tokenizer]
    assert family._family_flags(full) == [*family._family_flags(smoke), *family.V3_SIZE_FLAGS]


def test_family_v3_without_its_corpus_names_the_rebuild_command(tmp_path, monkeypatch):
    from peagle_nb.training.target import TargetTrainConfig, _split_docs

    monkeypatch.setenv("PEAGLE_CORPUS_V3", str(tmp_path / "nowhere"))
    from peagle_nb.text import corpus_v3

    with pytest.raises(corpus_v3.CorpusV3Error, match="build_corpus_v3.py"):
        _split_docs(TargetTrainConfig(out=tmp_path / "m", corpus="v3"))


@pytest.mark.slow
def test_determinism_command_compares_two_identical_runs(tmp_path):
    assert family.main(["determinism", "--family", "tiny", "--smoke", "--steps", "4", "--out", str(tmp_path / "o"),
                        "--work", str(tmp_path / "w")]) == 0
    doc = json.loads((tmp_path / "o" / "determinism.json").read_text())
    assert set(doc["runs"]) == {"run_a", "run_b"} and doc["exit_codes"] == {"run_a": 0, "run_b": 0}
    # on a CPU, same seed and threads: bit-identical (the GPU answer is recorded in the family v3 card)
    assert doc["weights_identical"] and doc["losses_identical"] and doc["heldout_loss_max_abs_difference"] == 0


def test_child_env_replaces_a_kernels_link_left_by_another_checkout(tmp_path):
    # A scratch folder outlives checkouts: its link may point at a deleted one (CI failed on exactly this).
    shim = tmp_path / "pyshim"
    shim.mkdir()
    (shim / "peagle_kernels").symlink_to(tmp_path / "deleted-checkout" / "kernels", target_is_directory=True)
    env = family.child_env(tmp_path)
    assert (shim / "peagle_kernels").resolve() == (paths.repo_root() / "kernels").resolve()
    assert str(shim) in env["PYTHONPATH"].split(os.pathsep)
    family.child_env(tmp_path)  # a second call keeps the right link
    assert [p.name for p in shim.iterdir()] == ["peagle_kernels"]


def test_the_v3_redirect_builds_its_shim_in_the_work_folder_named():
    assert family._work_of(["heads", "--work", "/x/w"]) == Path("/x/w")
    assert family._work_of(["all", "--work=/y"]) == Path("/y")
    assert family._work_of(["all"]) == Path("/tmp/peagle-family")
