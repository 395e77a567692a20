"""The lean engine equals the reference engine: forwards, and generations token for token and step for step."""

import pytest
import torch

from peagle_nb.files import paths
from peagle_nb.engine import SpecDecoder, load_prompts
from peagle_nb.engine.evaluate import evaluate, make_decoder
from peagle_nb.engine.lean import LeanDecoder
from peagle_nb.engine.lean.forward import LeanHead, LeanTarget
from peagle_nb.models.heads import DraftHead, config_for_target
from tests.engine.helpers import tiny_target

MODELS = paths.models_dir()


def random_head(target, kind, layers, seed=0):
    cfg = config_for_target(target.config, kind, num_layers=layers, draft_vocab_size=48,
                            mask_token_id=63 if kind == "peagle" else None, trained_k=8)
    head = DraftHead(cfg).to(target.dtype).eval()
    head.reset_parameters(std=0.2, seed=seed)  # large weights: drafts vary, so rejections happen at every depth
    with torch.no_grad():
        head.set_draft_vocab(torch.cat([torch.arange(0, 32, 2), torch.arange(32, 64)]))  # not a prefix: d2t != 0
    return head


@pytest.fixture(scope="module")
def gqa_target():
    return tiny_target(dtype=torch.float32, seed=3)  # 4 query heads, 2 key/value heads


@pytest.fixture(scope="module")
def shipped():
    from peagle_nb.models.heads import load_head
    from peagle_nb.models.target import load_target

    target, tok = load_target(MODELS / "tiny-target")
    return target, tok, {m: load_head(MODELS / f"tiny-{m}") for m in ("eagle3", "peagle")}


def test_target_forward_equals_transformers(gqa_target):
    """Logits and EAGLE-3 features of a prefill, then of 3 more rows at positions past a gap-free cache."""
    lean = LeanTarget(gqa_target)
    cache = lean.new_cache()
    ids = torch.randint(0, 64, (12,), generator=torch.Generator().manual_seed(0))
    pos = torch.arange(12)
    with torch.inference_mode():
        logits, feats = lean.forward(ids[:9], pos[:9], pos[:9], cache, (1, 3, 4))
        more, feats2 = lean.forward(ids[9:], pos[9:], pos[9:], cache, (1, 3, 4))
        hf = gqa_target(ids[None], output_hidden_states=True)
    assert torch.allclose(torch.cat([logits, more]), hf.logits[0], atol=1e-5)
    want = torch.cat([hf.hidden_states[i][0] for i in (1, 3, 4)], dim=-1)
    assert torch.allclose(torch.cat([feats, feats2]), want, atol=1e-5)


@pytest.mark.parametrize("kind,layers", [("eagle3", 1), ("peagle", 3)])
def test_head_forward_equals_draft_head(gqa_target, kind, layers):
    head = random_head(gqa_target, kind, layers)
    lean = LeanHead(head)
    cache = lean.new_cache()
    g = torch.Generator().manual_seed(1)
    ids, hidden = torch.randint(0, 64, (7,), generator=g), torch.randn(7, 32, generator=g)
    pos = torch.arange(7)
    with torch.inference_mode():
        pre = lean.forward(ids, hidden, pos, pos, cache)
        logits, pre_ref = head(ids[None], hidden[None], pos[None])
    assert torch.allclose(lean.logits(pre), logits[0], atol=1e-5)
    assert torch.allclose(pre, pre_ref[0], atol=1e-5)


@pytest.mark.parametrize("method,k", [("none", 1), ("eagle3", 1), ("eagle3", 4), ("peagle", 1), ("peagle", 5)])
@pytest.mark.parametrize("temperature,draft_sampling", [(0.0, "sample"), (1.0, "sample"), (1.0, "greedy")])
def test_random_models_same_tokens_and_steps(gqa_target, method, k, temperature, draft_sampling):
    head = random_head(gqa_target, method, 1 if method == "eagle3" else 2) if method != "none" else None
    kw = {"draft_sampling": draft_sampling} if method != "none" else {}
    ref = SpecDecoder(gqa_target, None, head, method, k, **kw)
    lean = LeanDecoder(gqa_target, None, head, method, k, **kw)
    for seed, prompt in enumerate(([5, 6, 7, 8, 9], [3], list(range(10, 40)))):
        a, b = ref.generate(prompt, 30, temperature, seed), lean.generate(prompt, 30, temperature, seed)
        assert a.tokens == b.tokens
        assert [s.accepted for s in a.steps] == [s.accepted for s in b.steps]


@pytest.mark.slow
def test_shipped_models_every_held_out_prompt_every_k(shipped):
    """Every held-out prompt of both sets, K = 1..10 in turn, EAGLE-3 and P-EAGLE, greedy and seeded sampling:
    the same tokens and the same accepted count at every step as the reference engine."""
    target, tok, heads = shipped
    prompts = [p for name in ("prose", "code") for p in load_prompts(paths.prompts_dir() / f"{name}.jsonl")]
    accepted_somewhere = 0
    for i, text in enumerate(prompts):
        ids = tok(text)["input_ids"]
        k = 1 + i % 10
        method = ("eagle3", "peagle")[i % 2]
        temperature = (0.0, 1.0)[(i // 2) % 2]
        a = SpecDecoder(target, tok, heads[method], method, k).generate(ids, 24, temperature, seed=i)
        b = LeanDecoder(target, tok, heads[method], method, k).generate(ids, 24, temperature, seed=i)
        assert a.tokens == b.tokens, (i, method, k, temperature)
        assert [s.accepted for s in a.steps] == [s.accepted for s in b.steps], (i, method, k, temperature)
        accepted_somewhere += sum(s.accepted for s in b.steps) > 0
    assert accepted_somewhere > len(prompts) // 2, "trained heads should get drafts accepted on most prompts"


def test_plain_decoding_equals_reference_on_held_out(shipped):
    target, tok, _ = shipped
    ref, lean = make_decoder("reference", target, tok), make_decoder("lean", target, tok)
    for text in load_prompts(paths.prompts_dir() / "code.jsonl", 6):
        ids = tok(text)["input_ids"]
        assert ref.generate(ids, 32).tokens == lean.generate(ids, 32).tokens


@pytest.mark.parametrize("method", ["eagle3", "peagle"])
def test_eager_input_builder_gives_the_same_generation(shipped, method):
    target, tok, heads = shipped
    ids = tok(load_prompts(paths.prompts_dir() / "code.jsonl", 1)[0])["input_ids"]
    fused = LeanDecoder(target, tok, heads[method], method, 6).generate(ids, 32)
    eager = LeanDecoder(target, tok, heads[method], method, 6, builder="eager").generate(ids, 32)
    assert fused.tokens == eager.tokens and [s.accepted for s in fused.steps] == [s.accepted for s in eager.steps]
    with pytest.raises(ValueError, match="builder must be"):
        LeanDecoder(target, tok, heads[method], method, 6, builder="triton")


def test_step_times_add_up_and_phases_are_timed(shipped):
    target, tok, heads = shipped
    dec = LeanDecoder(target, tok, heads["peagle"], "peagle", 4)
    res = dec.generate(tok("def main():")["input_ids"], 20)
    for s in res.steps:
        assert s.draft_ms > 0 and s.verify_ms > 0
        assert s.draft_ms + s.verify_ms + s.bookkeeping_ms == pytest.approx(s.wall_ms, rel=1e-6)
    assert set(dec.phase_ms(reps=3)) == {"build", "draft", "verify", "update"}


def test_evaluate_reports_spread_and_engine(shipped):
    target, tok, heads = shipped
    prompts = load_prompts(paths.prompts_dir() / "prose.jsonl", 2)
    rec = evaluate(target, tok, heads["eagle3"], "eagle3", 3, prompts, 16, repeats=3)
    assert rec["engine"] == "lean" and rec["lossless"] is True and rec["repeats"] == 3
    assert len(rec["tokens_per_s_repeats"]) == 3
    assert rec["tokens_per_s_p10"] <= rec["tokens_per_s"] <= rec["tokens_per_s_p90"]
    ref = evaluate(target, tok, heads["eagle3"], "eagle3", 3, prompts, 16, engine="reference")
    assert ref["engine"] == "reference" and ref["accepted_per_step"] == rec["accepted_per_step"]
    with pytest.raises(ValueError, match="unknown engine"):
        make_decoder("fast", target)


def test_too_long_generation_is_refused_before_decoding(shipped):
    target, tok, heads = shipped
    dec = LeanDecoder(target, tok, heads["peagle"], "peagle", 5)
    with pytest.raises(ValueError, match="max_position_embeddings"):
        dec.generate([5] * 1000, 64)
    with pytest.raises(ValueError, match="use_graphs=True needs"):
        LeanDecoder(target, tok, use_graphs=True)


@pytest.mark.parametrize("method,k", [("none", 1), ("eagle3", 3), ("peagle", 5)])
@pytest.mark.parametrize("temperature", [0.0, 1.0])
def test_padded_prefill_gives_the_same_generation(shipped, method, k, temperature):
    """The GPU's prefill path (prompt padded to a bucket length, last row picked on the device) run on the CPU:
    the same tokens and accepted counts as the unpadded prefill, for several prompt lengths."""
    target, tok, heads = shipped
    for text in load_prompts(paths.prompts_dir() / "prose.jsonl", 3):
        ids = tok(text)["input_ids"]
        plain = LeanDecoder(target, tok, heads.get(method), method, k).generate(ids, 20, temperature, seed=3)
        padded = LeanDecoder(target, tok, heads.get(method), method, k, pad_prefill=True).generate(
            ids, 20, temperature, seed=3)
        assert plain.tokens == padded.tokens
        assert [s.accepted for s in plain.steps] == [s.accepted for s in padded.steps]


@pytest.mark.parametrize("method", ["none", "eagle3", "peagle"])
@pytest.mark.parametrize("draft_sampling", ["sample", "greedy"])
def test_reference_sampler_gives_the_same_sampled_generation(shipped, method, draft_sampling):
    """The sampling kernels' path and their PyTorch op chains (the step before fusion) sample the same tokens."""
    target, tok, heads = shipped
    ids = tok(load_prompts(paths.prompts_dir() / "ja.jsonl", 1)[0])["input_ids"]
    kw = {} if method == "none" else {"draft_sampling": draft_sampling}
    a = LeanDecoder(target, tok, heads.get(method), method, 4, **kw).generate(ids, 24, 1.0, seed=7)
    b = LeanDecoder(target, tok, heads.get(method), method, 4, sampler="reference", **kw).generate(ids, 24, 1.0,
                                                                                                  seed=7)
    assert a.tokens == b.tokens and [s.accepted for s in a.steps] == [s.accepted for s in b.steps]
    with pytest.raises(ValueError, match="sampler must be"):
        LeanDecoder(target, tok, heads.get(method), method, 4, sampler="triton")


def test_sampled_phases_are_timed_after_a_sampled_generation(shipped):
    target, tok, heads = shipped
    dec = LeanDecoder(target, tok, heads["eagle3"], "eagle3", 3)
    with pytest.raises(RuntimeError, match="needs a sampled generation first"):
        dec.phase_ms(reps=2, greedy=False)
    dec.generate(tok("def main():")["input_ids"], 16, 1.0, seed=1)
    ph = dec.phase_ms(reps=2, greedy=False)
    assert set(ph) == {"build", "draft", "verify", "update"} and all(v > 0 for v in ph.values())


def test_records_carry_ttft_and_tpot(shipped):
    from peagle_nb.engine.evaluate import evaluate, repeat_outliers

    target, tok, heads = shipped
    prompts = load_prompts(paths.prompts_dir() / "code.jsonl", 2)
    rec = evaluate(target, tok, heads["peagle"], "peagle", 3, prompts, 12, temperature=1.0, repeats=2)
    assert 0 < rec["ttft_ms"] <= rec["ttft_ms_p90"] and 0 < rec["tpot_ms"] <= rec["tpot_ms_p90"]
    assert len(rec["tpot_ms_repeats"]) == 2 and isinstance(rec["repeat_outliers"], list)
    assert repeat_outliers([100.0, 102.0, 400.0, 99.0]) == [2] and repeat_outliers([1.0, 1.1, 0.95]) == []
