"""The tiny target: tokenizer, loading, EAGLE feature helpers, quality, smoke training and vLLM parity."""

from __future__ import annotations

import gc
import json
import math

import pytest
import torch

from peagle_nb.corpus import load_documents
from peagle_nb.prompts import load_prompt_records as load_prompts
from peagle_nb.models.target import aux_layer_ids, load_target, mask_token_id, target_features
from peagle_nb.training.target import heldout_loss, token_stream

# Perplexity on the first 4 windows of 256 tokens of the first held-out document per domain, measured
# on CPU (fp32) for the committed model (whole held-out split, model card: prose 34.8, code 14.8).
MEASURED_PPL = {"prose": 33.2, "code": 16.1}


@pytest.fixture(scope="module")
def target():
    return load_target()


@pytest.fixture
def one_thread():
    """A 7M-parameter model on a shared 2-core CI machine runs faster without OpenMP threads spinning."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def test_tokenizer_round_trips_and_has_mask(target):
    _, tok = target
    for text in ["To be, or not to be: that is the question:\n",
                 "    def __init__(self, x):\n        return {'k': [1, 2.5]}  # ok\n",
                 "naïve café — ünïcode ✓ 中文\t\n"]:
        ids = tok(text, add_special_tokens=False)["input_ids"]
        assert tok.decode(ids) == text
    mid = mask_token_id(tok)
    assert tok("a <mask> b", add_special_tokens=False)["input_ids"].count(mid) == 1
    assert len(tok) == 4096 and tok.eos_token == "<|endoftext|>" and mid != tok.eos_token_id
    assert tok("hello", add_special_tokens=True)["input_ids"] == tok("hello", add_special_tokens=False)["input_ids"]


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
    from peagle_nb.models.target import default_path

    sizes = {p.name: p.stat().st_size for p in default_path().iterdir()}
    assert max(sizes.values()) < 15 * 2**20 and sum(sizes.values()) < 16 * 2**20, sizes


@pytest.mark.parametrize("domain", ["prose", "code"])
def test_heldout_perplexity_far_below_uniform(target, domain, one_thread):
    model, tok = target
    stream = token_stream(tok, load_documents(domain, "heldout")[:1])
    ppl = math.exp(heldout_loss(model, stream, 256, 4, torch.device("cpu"), batch=4))
    assert ppl < len(tok) / 50
    assert ppl < MEASURED_PPL[domain] * 1.15, f"{domain} held-out ppl {ppl:.1f}"


def test_bad_training_settings_are_clear_errors(tmp_path):
    from peagle_nb.training.target import TargetTrainConfig, train_target

    with pytest.raises(ValueError, match="--seq-len 4096"):
        train_target(TargetTrainConfig.smoke_config(tmp_path, seq_len=4096))
    with pytest.raises(ValueError, match="--steps"):
        train_target(TargetTrainConfig.smoke_config(tmp_path, steps=0))


def test_smoke_training_runs_and_lowers_the_loss(tmp_path):
    from peagle_nb.cli import main

    out = tmp_path / "smoke-target"
    assert main(["train", "target", "--smoke", "--out", str(out), "--steps", "40", "--eval-every", "20"]) == 0
    log = json.loads((out / "training_log.json").read_text())
    first = log["first_train_loss"]
    assert math.isclose(first, math.log(log["vocab_size"]), rel_tol=0.1)  # starts near uniform
    for domain, loss in log["heldout_loss"].items():
        assert loss < first - 0.5, (domain, loss, first)
    model, tok = load_target(out)
    assert model.config.num_hidden_layers == 8 and mask_token_id(tok) == 2
    assert "SMOKE RUN" in (out / "README.md").read_text()


@pytest.mark.vllm
def test_vllm_greedy_matches_hf(target, monkeypatch):
    pytest.importorskip("vllm")
    monkeypatch.setenv("VLLM_ENABLE_V1_MULTIPROCESSING", "0")  # in-process engine: starts in seconds
    from vllm import LLM, SamplingParams

    from peagle_nb.models.target import default_path

    model, tok = target
    prompts = [load_prompts("prose")[0]["prompt"], load_prompts("code")[0]["prompt"]]
    ids = [tok(p, add_special_tokens=False)["input_ids"] for p in prompts]
    llm = LLM(model=str(default_path()), distributed_executor_backend="uni", enforce_eager=True,
              dtype="float32", max_model_len=256, seed=0)
    try:
        outs = llm.generate([{"prompt_token_ids": i} for i in ids],
                            SamplingParams(max_tokens=16, temperature=0.0, ignore_eos=True))
        text_outs = llm.generate(prompts[:1], SamplingParams(max_tokens=1, temperature=0.0))
    finally:  # shut the in-process engine down so later vLLM tests start clean
        try:
            llm.llm_engine.engine_core.shutdown()
        finally:
            del llm
            gc.collect()
    assert text_outs[0].prompt_token_ids == ids[0]  # vLLM tokenizes exactly like transformers (no BOS)
    for i, o in zip(ids, outs):
        hf = model.generate(torch.tensor([i]), max_new_tokens=16, do_sample=False,
                            pad_token_id=tok.pad_token_id)[0, len(i):].tolist()
        assert list(o.outputs[0].token_ids) == hf
