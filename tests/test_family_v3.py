"""Family v3's heads command: the plan (both methods at every rung with equal steps, P-EAGLE's ablations at one
rung), the conditional acceptance, clear errors on bad input, and a smoke run on a CPU through the same code path
(the shipped tiny target standing in for the v3 target, a corpus-v3-shaped folder cut from corpus v1)."""

import json
import tarfile

import pytest

from peagle_nb.files import paths
from peagle_nb.lab.training_runs import family, family_v3
from tests.test_family import _mini_corpus_v3


def test_the_plan_gives_both_methods_equal_steps_at_every_rung_and_ablates_p_eagle_at_one():
    plan = family_v3.head_plan([1, 3, 10], 200, 3, ["nocod", "zeros", "2layers"])
    assert set(plan) == {"v3-eagle3-r1", "v3-peagle-r1", "v3-eagle3-r3", "v3-peagle-r3", "v3-eagle3-r10",
                         "v3-peagle-r10", "v3-peagle-nocod-r3", "v3-peagle-zeros-r3", "v3-peagle-2layers-r3"}

    def steps(name):
        args = plan[name]
        return int(args[args.index("--steps") + 1])

    for r in (1, 3, 10):
        assert steps(f"v3-eagle3-r{r}") == steps(f"v3-peagle-r{r}") == 200 * r
    assert plan["v3-eagle3-r1"][:3] == ["eagle3", "--k", "7"] and plan["v3-peagle-r1"][:3] == ["peagle", "--k", "8"]
    assert plan["v3-peagle-nocod-r3"][-4:] == ["--cod-r", "1", "--cod-r-min", "1"]
    assert plan["v3-peagle-zeros-r3"][-2:] == ["--mask-hidden", "zeros"]
    assert plan["v3-peagle-2layers-r3"][-2:] == ["--num-layers", "2"]
    assert all(steps(n) == 600 for n in plan if "-r3" in n)


def test_p_eagle_can_be_trained_deeper_for_the_deep_k_check():
    plan = family_v3.head_plan([3], 300, 3, ["zeros"], peagle_k=16)
    assert plan["v3-peagle-r3"][:3] == plan["v3-peagle-zeros-r3"][:3] == ["peagle", "--k", "16"]
    assert plan["v3-eagle3-r3"][:3] == ["eagle3", "--k", "7"]  # EAGLE-3's unroll is its own recipe
    with pytest.raises(ValueError, match="--peagle-k 1 or more"):
        family_v3.head_plan([3], 300, peagle_k=0)


@pytest.mark.parametrize("rungs,rung,ablations,match", [
    ([], 3, [], "at least one positive"),
    ([1, 3], 3, ["dropout"], "unknown ablation"),
    ([1, 10], 3, ["zeros"], "not one of the rungs"),
])
def test_bad_plans_name_the_fix(rungs, rung, ablations, match):
    with pytest.raises(ValueError, match=match):
        family_v3.head_plan(rungs, 100, rung, ablations)


def test_conditional_acceptance_is_each_depth_given_the_one_before():
    assert family_v3.conditional_acceptance([0.8, 0.4, 0.1, 0.0, 0.0]) == pytest.approx([0.8, 0.5, 0.25, 0.0, None])


def test_the_head_report_reads_a_trained_head_per_depth_and_conditionally():
    report = family_v3.head_report(paths.models_dir() / "tiny-peagle")
    assert report["layers"] == 4 and report["mask_hidden"] == "learned" and report["weights_sha256"]
    for res in report["acceptance"].values():  # at the trained depth: a_d given a_(d-1), from the card's rates
        rates, cond = res["accept_rate_per_position"], res["conditional"]
        assert res["k"] == 8 and len(rates) == len(cond) == 8
        assert all(c == pytest.approx(a / b) for a, b, c in zip(rates[1:], rates[:-1], cond[1:]) if b > 0)


def test_heads_without_a_target_say_how_to_make_one(tmp_path, capfd):
    # through the family command, as documented (it runs family_v3 as a child process)
    assert family.main(["heads", "--family", "v3", "--smoke", "--target", str(tmp_path / "none"), "--out",
                        str(tmp_path / "o"), "--work", str(tmp_path / "w")]) != 0
    err = capfd.readouterr().err
    assert "no target at" in err and "family all --family v3" in err
    with pytest.raises(SystemExit, match="family all --family v3"):
        family_v3.main(["heads", "--smoke", "--target", str(tmp_path / "none"), "--out", str(tmp_path / "o"),
                        "--work", str(tmp_path / "w")])


def test_bad_ablation_on_the_command_line_names_the_options(tmp_path):
    with pytest.raises(SystemExit, match="unknown ablation.*--ablations"):
        family_v3.main(["heads", "--smoke", "--target", str(paths.models_dir() / "tiny-target"),
                        "--ablations", "dropout", "--out", str(tmp_path / "o"), "--work", str(tmp_path / "w")])


def test_all_is_family_v3s(tmp_path):
    with pytest.raises(SystemExit, match="add --family v3"):
        family.main(["all", "--smoke", "--out", str(tmp_path / "o")])


def test_pack_order_keeps_the_highest_rung_pair_first():
    names = ["v3-eagle3-r1", "v3-peagle-r1", "v3-eagle3-r10", "v3-peagle-r10", "v3-peagle-zeros-r3"]
    assert family_v3.pack_order([1, 10], names) == ["v3-eagle3-r10", "v3-peagle-r10", "v3-eagle3-r1",
                                                    "v3-peagle-r1", "v3-peagle-zeros-r3"]


def test_heads_that_do_not_fit_the_files_left_are_left_out_and_named(tmp_path):
    import os

    heads = tmp_path / "v3-heads"
    for name in ("a", "b", "c"):
        (heads / name).mkdir(parents=True)
        (heads / name / "model.safetensors").write_bytes(os.urandom(3000))  # incompressible
    res = family_v3.pack_heads(heads, ["a", "b", "c"], tmp_path / "v3-heads.tar.gz", max_parts=2, part_bytes=4000)
    assert res["heads"] == ["a", "b"] and res["left_out"] == ["c"] and len(res["parts"]) == 2
    assert family_v3.pack_heads(heads, ["a"], tmp_path / "none.tar.gz", max_parts=0)["parts"] == []


def test_the_conditional_acceptance_is_written_into_the_heads_log(tmp_path):
    log = {"acceptance": {"prose": {"3": {"accept_rate_per_position": [0.5, 0.25, 0.2]}}}}
    (tmp_path / "training_log.json").write_text(json.dumps(log))
    family_v3.record_conditional(tmp_path)
    res = json.loads((tmp_path / "training_log.json").read_text())["acceptance"]["prose"]["3"]
    assert res["conditional_accept_rate_per_position"] == pytest.approx([0.5, 0.5, 0.8])


@pytest.fixture(scope="module")
def all_at_smoke_size(tmp_path_factory):
    """One `family all --family v3` smoke run (the target, then the ladder and two ablations on it) that the target,
    heads and summary tests below all read: each of those stages costs a minute on two cores."""
    root = tmp_path_factory.mktemp("family_v3_all")
    corpus, out = root / "v3", root / "out"
    _mini_corpus_v3(corpus)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PEAGLE_CORPUS_V3", str(corpus))
        mp.setenv("PEAGLE_CORPUS_V3_MANIFEST", str(corpus / "manifest_v3.json"))
        code = family.main(["all", "--family", "v3", "--smoke", "--rungs", "1", "--base-steps", "2",
                            "--ablation-rung", "1", "--ablations", "zeros", "nocod", "--gen-batch", "8",
                            "--out", str(out), "--work", str(root / "w")])
    return code, out, root


@pytest.mark.slow
def test_all_at_smoke_size_trains_the_target_then_its_heads_into_one_summary(all_at_smoke_size):
    code, out, _ = all_at_smoke_size
    assert code == 0
    names = {p.name for p in out.iterdir()}
    assert len(names) <= 8 and {"family_all.json", "family_all.log"} <= names  # what one GPU call may return
    assert not names & {"family_target.json", "family_heads.json"}  # one summary
    doc = json.loads((out / "family_all.json").read_text())
    assert doc["heads"]["target_weights_sha256"] == doc["target"]["weights_sha256"]  # heads on the fresh target
    assert set(doc["heads"]["heads"]) == {"v3-eagle3-r1", "v3-peagle-r1", "v3-peagle-zeros-r1", "v3-peagle-nocod-r1"}
    assert doc["heads"]["heads"]["v3-peagle-nocod-r1"]["cod"] == [1.0, 1.0]
    assert any(n.startswith("v3-target.tar.gz.part") for n in names)
    assert any(n.startswith("v3-heads.tar.gz.part") for n in names)


@pytest.mark.slow
def test_target_at_smoke_size_reuses_the_tokenizer_lifts_small_domains_and_packs_parts(all_at_smoke_size):
    from peagle_nb.models.target import load_target

    code, out, root = all_at_smoke_size
    assert code == 0
    summary = json.loads((out / "family_all.json").read_text())["target"]
    assert summary["command"].endswith("--family v3 --smoke")
    parts = sorted(out.glob("v3-target.tar.gz.part*"))
    assert parts and [p.name for p in parts] == [r["file"] for r in summary["packed"]]
    folder = family.unpack_parts(parts[0], root / "models")
    assert folder.name == "v3-target"
    assert family.weights_sha256(folder) == summary["weights_sha256"]  # the card's weights are the packed ones
    log = json.loads((folder / "training_log.json").read_text())
    assert log["corpus"] == "v3" and log["tokenizer"]["reused_from"].endswith("tiny-target")
    assert set(log["heldout"]) == set(log["heldout_v3"]) == {"prose", "code", "ja"}
    assert log["evaluation"]["max_windows"] == 8  # smoke: v1's held-out split by its first windows, not whole
    share = log["domain_sampling"]
    tokens = log["train_tokens"]
    smallest = min(tokens, key=tokens.get)
    assert abs(sum(share.values()) - 1) < 1e-3
    assert share[smallest] > tokens[smallest] / sum(tokens.values())  # alpha 0.7 lifts the smallest domain
    model, tok = load_target(folder)
    assert len(tok) == len(load_target()[1])  # the tiny target's tokenizer, reused
    assert model.config.num_hidden_layers == 8
    card = (folder / "README.md").read_text()
    assert card.startswith("# v3-target") and "## Family v3 against the tiny target" in card
    assert all(digest in card for digest in summary["weights_sha256"].values())
    assert set(log["baseline_heldout_bits_per_byte"]) == {"prose", "code", "ja"}


@pytest.mark.slow
def test_heads_at_smoke_size_train_the_ladder_and_ablations_and_pack_them(all_at_smoke_size):
    code, out, root = all_at_smoke_size
    assert code == 0
    summary = json.loads((out / "family_all.json").read_text())["heads"]
    assert set(summary["heads"]) == {"v3-eagle3-r1", "v3-peagle-r1", "v3-peagle-zeros-r1", "v3-peagle-nocod-r1"}
    assert summary["exit_codes"] == {n: 0 for n in summary["heads"]}
    assert summary["pair_steps_run"] == {"r1": {"eagle3": 2, "peagle": 2}}
    for name, head in summary["heads"].items():
        assert head["steps_run"] == 2 and head["acceptance"]  # equal steps; measured per prompt set
        for res in head["acceptance"].values():
            rates = res["accept_rate_per_position"]
            assert len(res["conditional"]) == len(rates) and res["conditional"][0] == pytest.approx(rates[0])
    assert summary["heads"]["v3-peagle-zeros-r1"]["mask_hidden"] == "zeros"
    assert summary["heads"]["v3-peagle-r1"]["layers"] == 4 and summary["heads"]["v3-eagle3-r1"]["layers"] == 1
    parts = sorted(out.glob("v3-heads.tar.gz.part*"))
    assert parts
    unpacked = root / "heads"
    unpacked.mkdir()
    whole = root / "joined.tar.gz"
    whole.write_bytes(b"".join(p.read_bytes() for p in parts))
    with tarfile.open(whole) as tar:
        tar.extractall(unpacked, filter="data")
    assert {p.name for p in (unpacked / "v3-heads").iterdir()} == set(summary["heads"])
    assert summary["packed"]["left_out"] == [] and summary["data"]["n_sequences"] >= 1
    log = json.loads((unpacked / "v3-heads" / "v3-peagle-r1" / "training_log.json").read_text())
    assert all("conditional_accept_rate_per_position" in res for by_k in log["acceptance"].values()
               for res in by_k.values())


def test_heads_without_the_committed_corpus_stop_before_building_data(tmp_path, monkeypatch):
    # the validation prompts are cut from it after training: a corpus moved out (to make room in a GPU carry) once
    # ended an H100 run after its data and training, the heads lost; now the run stops first and says why
    from peagle_nb.text import corpus
    from peagle_nb.training.drafter_config import DrafterTrainConfig

    monkeypatch.setattr(corpus, "corpus_dir", lambda: tmp_path / "moved-out")
    args = ["heads", "--target", str(paths.models_dir() / "tiny-target"), "--out", str(tmp_path / "o"), "--work",
            str(tmp_path / "w")]
    with pytest.raises(SystemExit, match=r"--val-prompts 16 needs the committed corpus.*prose.jsonl.gz.*git checkout"):
        family_v3.main(args)
    assert not (tmp_path / "w" / "heads" / "drafter_data.pt").exists()
    with pytest.raises(SystemExit, match="--val-prompts 16 needs the committed corpus"):
        family.main(args)  # the tiny family's heads command too
    with pytest.raises(ValueError, match=r"--val-prompts 4 cuts prompts.*or pass --val-prompts 0"):
        DrafterTrainConfig(kind="peagle", out=tmp_path, val_prompts=4).validate()
    DrafterTrainConfig(kind="peagle", out=tmp_path, val_prompts=0).validate()  # nothing read: nothing needed


def test_a_heads_run_with_a_failed_head_exits_nonzero_and_names_it(capsys):
    # a lease chain once swept after "heads rc=0" with both heads gone: the exit code now says they failed
    summary = {"failed": ["v3-peagle-r3"], "exit_codes": {"v3-eagle3-r3": 0, "v3-peagle-r3": 2}}
    assert family.heads_exit(["v3-eagle3-r3", "v3-peagle-r3"], summary) == 1
    assert "1 of 2 heads failed: v3-peagle-r3 (exit 2, see v3-peagle-r3.log" in capsys.readouterr().out
    assert family.heads_exit(["v3-eagle3-r3"], {"failed": [], "exit_codes": {"v3-eagle3-r3": 0}}) == 0
