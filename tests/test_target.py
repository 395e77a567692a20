"""The tiny target: tokenizer, loading, EAGLE feature helpers, quality recomputed from the committed model,
smoke training, sharded checkpoints and vLLM parity."""

from __future__ import annotations

import gc
import json
import math

import pytest
import torch

from peagle_nb.text.corpus import load_documents
from peagle_nb.text.prompts import load_prompt_records as load_prompts
from peagle_nb.models.target import aux_layer_ids, default_path, load_target, mask_token_id, target_features
from peagle_nb.models.tokenizer import encoding_stats
from peagle_nb.training.target_eval import token_stream, window_losses


@pytest.fixture(scope="module")
def target():
    return load_target()


@pytest.fixture(scope="module")
def training_log():
    """The committed model's log: every number the tests check against comes from it (written by code)."""
    return json.loads((default_path() / "training_log.json").read_text(encoding="utf-8"))


@pytest.fixture
def one_thread():
    """A 7M-parameter model on a shared 2-core CI machine runs faster without OpenMP threads spinning."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def test_tokenizer_round_trips_and_has_mask(target, training_log):
    _, tok = target
    for text in ["To be, or not to be: that is the question:\n",
                 "    def __init__(self, x):\n        return {'k': [1, 2.5]}  # ok\n",
                 "naïve café — ünïcode ✓ 中文\t\n",
                 "Debian のパッケージ管理システムは、適正に使われれば整合性を保ちます。\n"]:
        ids = tok(text, add_special_tokens=False)["input_ids"]
        assert tok.decode(ids) == text
    mid = mask_token_id(tok)
    assert tok("a <mask> b", add_special_tokens=False)["input_ids"].count(mid) == 1
    assert len(tok) == training_log["vocab_size"] and tok.eos_token == "<|endoftext|>" and mid != tok.eos_token_id
    assert tok.convert_ids_to_tokens([0, 1, 2]) == ["<|endoftext|>", "<|pad|>", "<mask>"]
    assert tok("hello", add_special_tokens=True)["input_ids"] == tok("hello", add_special_tokens=False)["input_ids"]


def test_logged_tokenizer_figures_are_recomputed(target, training_log):
    """Bytes per token and tokens per character per domain: the log's numbers come from the committed
    tokenizer on the validation split."""
    _, tok = target
    logged = training_log["tokenizer"]
    assert logged["measured_on"] == "validation" and logged["vocab_size"] == len(tok)
    for domain, rec in logged["per_domain"].items():
        now = encoding_stats(tok, load_documents(domain, "validation"))
        assert now["tokens"] == rec["tokens"] and now["bytes"] == rec["bytes"], domain
        assert now["tokens_per_char"] == pytest.approx(rec["tokens_per_char"], rel=1e-9)
    # the draft-vocabulary proposal follows from the logged coverage table
    cov = {int(k): v for k, v in logged["draft_vocab_coverage"].items()}
    from peagle_nb.models.tokenizer import propose_draft_vocab_size

    assert propose_draft_vocab_size(cov, logged["min_coverage"]) == logged["proposed_draft_vocab_size"]


def test_mask_token_missing_is_a_clear_error():
    class NoMask:
        unk_token_id = None

        def convert_tokens_to_ids(self, t):
            return None

    with pytest.raises(ValueError, match="<mask>"):
        mask_token_id(NoMask())


def test_missing_model_folder_names_the_fix(tmp_path):
    with pytest.raises(FileNotFoundError, match="peagle-nb train target"):
        load_target(tmp_path / "nothing")


def test_architecture_and_feature_layers(target):
    model, tok = target
    cfg = model.config
    L = cfg.num_hidden_layers
    assert L >= 6 and cfg.vocab_size == len(tok)
    ids = aux_layer_ids(L)
    assert ids == (2, L // 2, L - 3) and len(set(ids)) == 3
    x = torch.tensor([tok("def f(x):\n    return x\n", add_special_tokens=False)["input_ids"]])
    with torch.no_grad():
        out = model(input_ids=x, output_hidden_states=True)
    assert len(out.hidden_states) == L + 1
    feats = target_features(out.hidden_states, ids)
    assert feats.shape == (1, x.shape[1], 3 * cfg.hidden_size)
    assert torch.equal(feats[..., cfg.hidden_size: 2 * cfg.hidden_size], out.hidden_states[ids[1]])
    with pytest.raises(ValueError, match="out of range"):
        target_features(out.hidden_states, (2, 4, L))


def test_committed_files_are_small(target):
    sizes = {p.name: p.stat().st_size for p in default_path().iterdir()}
    assert max(sizes.values()) < 15 * 2**20, sizes
    models = [p for p in default_path().parent.rglob("*") if p.is_file()]
    assert sum(p.stat().st_size for p in models) <= 40 * 2**20  # the whole data/models/ budget


def test_heldout_summary_is_the_mean_of_its_logged_windows(training_log):
    ev = training_log["evaluation"]
    assert ev["split"] == "heldout" and ev["dtype"].startswith("float32")
    for domain, rec in training_log["heldout"].items():
        windows = rec["windows"]
        assert len(windows) == (rec["tokens"] - 1) // ev["seq_len"]  # the whole held-out stream
        assert rec["loss"] == pytest.approx(sum(windows) / len(windows), abs=1e-6)
        assert training_log["heldout_loss"][domain] == rec["loss"]
        assert training_log["heldout_ppl"][domain] == pytest.approx(math.exp(rec["loss"]), rel=1e-9)
    card = (default_path() / "README.md").read_text(encoding="utf-8")
    for domain, ppl in training_log["heldout_ppl"].items():
        assert f"| {domain} |" in card and f"| {ppl:.1f} |" in card


@pytest.mark.parametrize("domain", ["prose", "code", "ja"])
def test_logged_heldout_windows_are_recomputed_from_the_committed_model(target, training_log, domain, one_thread):
    """Three windows per domain (first, middle, last) recomputed on CPU in fp32 from the committed weights
    must give the logged losses: the reported perplexity is what this folder's model does on held-out text."""
    model, tok = target
    rec = training_log["heldout"][domain]
    seq_len = training_log["evaluation"]["seq_len"]
    stream = token_stream(tok, load_documents(domain, "heldout"))
    assert len(stream) == rec["tokens"]
    n = len(rec["windows"])
    picks = sorted({0, n // 2, n - 1})
    now = window_losses(model, stream, seq_len, None, torch.device("cpu"), batch=1, windows=picks, autocast=False)
    for j, loss in zip(picks, now):
        assert loss == pytest.approx(rec["windows"][j], abs=2e-3), (domain, j)


def test_trained_domains_are_far_below_uniform(training_log):
    for domain in training_log["train_tokens"]:
        assert training_log["heldout_ppl"][domain] < training_log["vocab_size"] / 50, domain


def test_bad_training_settings_are_clear_errors(tmp_path):
    from peagle_nb.training.target import TargetTrainConfig, train_target

    with pytest.raises(ValueError, match="--seq-len 4096"):
        train_target(TargetTrainConfig.smoke_config(tmp_path, seq_len=4096))
    with pytest.raises(ValueError, match="--steps"):
        train_target(TargetTrainConfig.smoke_config(tmp_path, steps=0))


def test_smoke_training_runs_and_lowers_the_loss(tmp_path):
    from peagle_nb.cli import main

    out = tmp_path / "smoke-target"
    assert main(["train", "target", "--smoke", "--out", str(out), "--steps", "40", "--eval-every", "10"]) == 0
    log = json.loads((out / "training_log.json").read_text())
    first = log["first_train_loss"]
    assert math.isclose(first, math.log(log["vocab_size"]), rel_tol=0.1)  # starts near uniform
    assert log["domains"] == ["prose", "code", "ja"]
    for domain, loss in log["heldout_loss"].items():
        assert loss < first - 0.3, (domain, loss, first)
    # the kept checkpoint is the one with the lowest mean VALIDATION loss, reported on held-out text
    means = {h["step"]: sum(h["validation_loss"].values()) / 3 for h in log["history"]}
    assert log["best_step"] == min(means, key=means.get)
    assert log["validation_loss"] == next(h["validation_loss"] for h in log["history"] if h["step"] == log["best_step"])
    assert len(log["heldout"]["ja"]["windows"]) == 8 and log["evaluation"]["split"] == "heldout"
    tk = log["tokenizer"]
    assert set(tk["per_domain"]) == {"prose", "code", "ja"} and set(tk["vocab_sweep"]) == {"384", "512"}
    assert tk["proposed_draft_vocab_size"] in (128, 256)
    model, tok = load_target(out)
    assert model.config.num_hidden_layers == 8 and mask_token_id(tok) == 2
    card = (out / "README.md").read_text()
    assert "SMOKE RUN" in card and "bits per byte" in card and "validation" in card


def test_sharded_checkpoint_loads(tmp_path):
    """Above ``max_shard_size`` the weights are split into shards + an index that transformers loads."""
    from transformers import LlamaForCausalLM

    from peagle_nb.models.target import make_config, save_target
    from peagle_nb.training.target import SMOKE_ARCH

    _, tok = load_target()
    torch.manual_seed(0)
    model = LlamaForCausalLM(make_config(len(tok), tok.eos_token_id, tok.pad_token_id, **SMOKE_ARCH)).eval()
    (tmp_path / "model.safetensors").write_bytes(b"stale")  # an earlier unsharded save is replaced
    save_target(model, tok, tmp_path, max_shard_size="200KB")
    shards = sorted(p.name for p in tmp_path.glob("model-*.safetensors"))
    assert len(shards) >= 2 and (tmp_path / "model.safetensors.index.json").is_file()
    assert not (tmp_path / "model.safetensors").exists()
    loaded, _ = load_target(tmp_path)
    x = torch.tensor([[5, 6, 7, 8]])
    with torch.no_grad():
        want = model.to(torch.bfloat16).float()(input_ids=x).logits  # saved in bf16
        assert torch.allclose(loaded(input_ids=x).logits, want, atol=1e-5)


@pytest.mark.vllm
@pytest.mark.parametrize("layout", ["committed", "resharded"])
def test_vllm_greedy_matches_hf(target, monkeypatch, tmp_path, layout):
    """vLLM loads the target folder (as committed, and re-saved as several shards + index) and its greedy
    output equals transformers', on an English, a Python and a Japanese prompt."""
    pytest.importorskip("vllm")
    monkeypatch.setenv("VLLM_ENABLE_V1_MULTIPROCESSING", "0")  # in-process engine: starts in seconds
    from vllm import LLM, SamplingParams

    from peagle_nb.models.target import save_target

    model, tok = target
    folder = default_path()
    if layout == "resharded":
        folder = save_target(model, tok, tmp_path / "sharded", max_shard_size="3MB")
        assert len(list(folder.glob("model-*-of-*.safetensors"))) >= 3
    prompts = [load_prompts(d)[0]["prompt"] for d in ("prose", "code", "ja")]
    ids = [tok(p, add_special_tokens=False)["input_ids"] for p in prompts]
    llm = LLM(model=str(folder), distributed_executor_backend="uni", enforce_eager=True,
              dtype="float32", max_model_len=512, seed=0)
    try:
        outs = llm.generate([{"prompt_token_ids": i} for i in ids],
                            SamplingParams(max_tokens=16, temperature=0.0, ignore_eos=True))
        text_outs = llm.generate(prompts, SamplingParams(max_tokens=1, temperature=0.0))
    finally:  # shut the in-process engine down so later vLLM tests start clean
        try:
            llm.llm_engine.engine_core.shutdown()
        finally:
            del llm
            gc.collect()
    assert [o.prompt_token_ids for o in text_outs] == ids  # vLLM tokenizes exactly like transformers (no BOS)
    for i, o in zip(ids, outs):
        hf = model.generate(torch.tensor([i]), max_new_tokens=16, do_sample=False,
                            pad_token_id=tok.pad_token_id)[0, len(i):].tolist()
        assert list(o.outputs[0].token_ids) == hf


def test_width_sets_heads_and_mlp_and_refuses_a_width_that_splits_no_heads(tmp_path):
    import argparse

    from peagle_nb.lab.training_runs import family
    from peagle_nb.training.target import add_arguments, config_from_args

    p = argparse.ArgumentParser()
    add_arguments(p)
    cfg = config_from_args(p.parse_args(["--corpus", "v3", "--width", "512", "--out", str(tmp_path)]))
    assert cfg.arch["num_hidden_layers"] == 32  # family v3's depth kept
    assert (cfg.arch["hidden_size"], cfg.arch["num_attention_heads"], cfg.arch["intermediate_size"]) == (512, 8, 1280)
    smoke = config_from_args(p.parse_args(["--smoke", "--width", "128", "--out", str(tmp_path)]))
    arch = smoke.arch
    assert (arch["hidden_size"], arch["num_attention_heads"], arch["num_hidden_layers"]) == (128, 2, 8)
    default = config_from_args(p.parse_args(["--corpus", "v3", "--out", str(tmp_path)]))
    assert default.arch["hidden_size"] == 256 and default.arch["intermediate_size"] == 640
    with pytest.raises(SystemExit, match="multiple of 64"):
        config_from_args(p.parse_args(["--width", "100", "--out", str(tmp_path)]))
    # the family command passes it on to the v3 target's trainer
    flags = family._family_flags(argparse.Namespace(family="v3", smoke=False, width=512))
    assert flags[flags.index("--width") + 1] == "512"
    assert "--width" not in family._family_flags(argparse.Namespace(family="v3", smoke=False, width=None))
