"""``peagle-nb eval --json`` end to end on a tiny random target + heads saved to disk."""

import json

import pytest
import torch

from peagle_nb.cli import main


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory):
    from peagle_nb.models.heads import DraftHead, config_for_target, export_head
    from peagle_nb.models.target import make_config, mask_token_id, save_target
    from peagle_nb.models.tokenizer import train_tokenizer
    from transformers import LlamaForCausalLM

    root = tmp_path_factory.mktemp("evalcli")
    text = ["the quick brown fox jumps over the lazy dog " * 20, "def f(x):\n    return x + 1\n" * 20]
    tok = train_tokenizer(text, vocab_size=300)
    torch.manual_seed(0)
    cfg = make_config(len(tok), tok.eos_token_id, tok.pad_token_id, hidden_size=64, intermediate_size=128,
                      num_hidden_layers=6, num_attention_heads=2, num_key_value_heads=2)
    save_target(LlamaForCausalLM(cfg).eval(), tok, root / "target")
    mid = mask_token_id(tok)
    for kind in ("eagle3", "peagle"):
        hc = config_for_target(cfg, kind, num_layers=1 if kind == "eagle3" else 2, draft_vocab_size=128,
                               mask_token_id=mid if kind == "peagle" else None, trained_k=4)
        export_head(DraftHead(hc), root / f"tiny-{kind}")
    lines = [json.dumps({"id": f"p-{i}", "domain": "prose", "prompt": f"the quick brown fox {i}"}) for i in range(3)]
    (root / "prompts.jsonl").write_text("\n".join(lines) + "\n")
    return root


KEYS = {"method", "k", "n_prompts", "tau", "accept_rate_per_position", "tokens_per_s", "draft_ms_per_step",
        "verify_ms_per_step", "lossless"}


@pytest.mark.parametrize("method", ["none", "eagle3", "peagle"])
def test_eval_json(artifacts, capsys, method):
    rc = main(["eval", "--method", method, "--k", "3", "--prompts", str(artifacts / "prompts.jsonl"),
               "--max-new-tokens", "12", "--json", "--target", str(artifacts / "target"),
               "--head", str(artifacts / f"tiny-{method}")])
    assert rc == 0
    rec = json.loads(capsys.readouterr().out)
    assert KEYS <= set(rec)
    assert rec["method"] == method and rec["n_prompts"] == 3 and rec["lossless"] is True
    assert len(rec["accept_rate_per_position"]) == (0 if method == "none" else 3)
    assert 1.0 <= rec["tau"] <= 4.0 and rec["tokens_per_s"] > 0


def test_eval_sweep_writes_results(artifacts, capsys):
    from peagle_nb.files.results import read_results

    out = artifacts / "sweep.json"
    rc = main(["eval", "--sweep", "--ks", "1,2", "--prompts", str(artifacts / "prompts.jsonl"), "--limit", "1",
               "--max-new-tokens", "6", "--repeats", "2", "--sweeps", "2", "--equal-prompts", "1",
               "--target", str(artifacts / "target"), "--heads-dir", str(artifacts), "--out", str(out)])
    assert rc == 0
    doc = read_results(out)
    assert {r["method"] for r in doc["runs"]} == {"none", "eagle3", "peagle"}
    assert len(doc["runs"]) == 2 * (1 + 2 * 2) and all(r["lossless"] for r in doc["runs"])
    assert sorted({r["sweep"] for r in doc["runs"]}) == [0, 1] and all(len(r["tokens_per_s_repeats"]) == 2
                                                                     for r in doc["runs"])
    s = doc["summary"]["prompts"]
    assert s["sweeps"] == 2 and s["peagle.best_k"] in (1, 2) and len(s["peagle.best_k_per_sweep"]) == 2
    ratio = s["peagle_over_eagle3_at_best_k"]
    assert ratio["min"] <= ratio["median"] <= ratio["max"]
    assert s["peagle_over_eagle3_verdict"] == ("peagle faster" if ratio["min"] > 1 else
                                               "eagle3 faster" if ratio["max"] < 1 else "tie")
    assert doc["machine"]["device"] == "cpu" and doc["equality"]["all_equal"] is True
    assert {(r["method"], r["k"]) for r in doc["phases"]} == {("none", 0)} | {(m, k) for m in ("eagle3", "peagle")
                                                                              for k in (1, 2)}
    assert doc["engines"]["lean_over_reference"]["median"] > 0
    assert {(r["k"], r["builder"]) for r in doc["builder_comparison"]} == {(2, "fused"), (2, "eager")}


def test_eval_sweep_needs_heads(artifacts, capsys, tmp_path):
    rc = main(["eval", "--sweep", "--prompts", str(artifacts / "prompts.jsonl"), "--target", str(artifacts / "target"),
               "--heads-dir", str(tmp_path), "--out", str(tmp_path / "x.json")])
    assert rc == 2 and "no eagle3 head" in capsys.readouterr().err


def test_eval_bad_prompt_file(artifacts, capsys, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "x", "prompt": ""}\n')
    rc = main(["eval", "--method", "none", "--prompts", str(bad), "--target", str(artifacts / "target")])
    assert rc == 2 and "empty prompt" in capsys.readouterr().err
    rc = main(["eval", "--method", "none", "--prompts", str(tmp_path / "missing.jsonl"),
               "--target", str(artifacts / "target")])
    assert rc == 2 and "not found" in capsys.readouterr().err


def test_eval_sampling(artifacts, capsys):
    rc = main(["eval", "--method", "eagle3", "--k", "2", "--prompts", str(artifacts / "prompts.jsonl"),
               "--max-new-tokens", "8", "--temperature", "0.8", "--json", "--target", str(artifacts / "target"),
               "--head", str(artifacts / "tiny-eagle3")])
    rec = json.loads(capsys.readouterr().out)
    assert rc == 0 and rec["temperature"] == 0.8
    assert rec["lossless"] is None  # sampled output is checked statistically (test_rejection_sampling), not by equality


@pytest.mark.parametrize("engine", ["lean", "reference"])
def test_eval_with_a_drafter_window_is_lossless_and_says_its_window(artifacts, capsys, engine):
    rc = main(["eval", "--method", "peagle", "--k", "3", "--prompts", str(artifacts / "prompts.jsonl"),
               "--max-new-tokens", "24", "--json", "--target", str(artifacts / "target"), "--engine", engine,
               "--head", str(artifacts / "tiny-peagle"), "--drafter-window", "4", "--drafter-sinks", "1"])
    assert rc == 0
    rec = json.loads(capsys.readouterr().out)
    assert rec["lossless"] is True and (rec["drafter_window"], rec["drafter_sinks"]) == (4, 1)


def test_eval_summary_names_the_drafter_window(artifacts, capsys):
    rc = main(["eval", "--method", "eagle3", "--k", "2", "--prompts", str(artifacts / "prompts.jsonl"),
               "--max-new-tokens", "12", "--target", str(artifacts / "target"), "--head",
               str(artifacts / "tiny-eagle3"), "--drafter-window", "4", "--repeats", "1"])
    assert rc == 0 and "(lean engine, drafter window 4): " in capsys.readouterr().out


def test_eval_sweep_refuses_a_drafter_window_and_names_the_windowed_sweep(artifacts, capsys):
    rc = main(["eval", "--sweep", "--prompts", str(artifacts / "prompts.jsonl"), "--target", str(artifacts / "target"),
               "--heads-dir", str(artifacts), "--drafter-window", "4", "--out", str(artifacts / "x.json")])
    assert rc == 2
    assert "engine_sweep --sections none --drafter-window" in capsys.readouterr().err
