"""The batched lean engine: every request of a batch gets exactly the tokens and accepted counts it gets when the
single-request lean engine decodes it alone (greedy and seeded sampling, plain / EAGLE-3 / P-EAGLE, mixed prompt
lengths and stop points, K = 1..10), and bad batches get a clear error."""

import pytest
import torch

from peagle_nb.files import paths
from peagle_nb.engine import load_prompts
from peagle_nb.engine.lean import LeanDecoder
from peagle_nb.engine.lean.batch import BATCH_BUCKETS, BatchLeanDecoder, batch_bucket
from tests.engine.helpers import tiny_target
from tests.engine.test_lean_engine import random_head

MODELS = paths.models_dir()
PROMPTS = ([5, 6, 7, 8, 9], [3], list(range(10, 40)), [11, 12], [40, 41, 42, 43, 44, 45, 46])


@pytest.fixture(scope="module")
def gqa_target():
    return tiny_target(dtype=torch.float32, seed=3)


def _alone(target, head, method, k, prompts, budgets, temperature, seeds, eos=None, **kw):
    dec = LeanDecoder(target, None, head, method, k, **kw)
    return [dec.generate(p, m, temperature, s, eos) for p, m, s in zip(prompts, budgets, seeds)]


def _same(batch, alone):
    for got, want in zip(batch.results, alone):
        assert got.tokens == want.tokens
        assert [s.accepted for s in got.steps] == [s.accepted for s in want.steps]


CASES = [("none", 1, 0.0, "sample"), ("none", 1, 1.0, "sample")] + [
    (m, k, t, "sample") for m in ("eagle3", "peagle") for k in range(1, 11) for t in (0.0, 1.0)] + [
    (m, k, 1.0, "greedy") for m in ("eagle3", "peagle") for k in (1, 4)]  # vLLM's argmax drafts, verified at T=1


@pytest.mark.parametrize("method,k,temperature,draft_sampling", CASES)
def test_random_models_each_request_as_alone(gqa_target, method, k, temperature, draft_sampling):
    head = random_head(gqa_target, method, 1 if method == "eagle3" else 2) if method != "none" else None
    kw = {"draft_sampling": draft_sampling} if method != "none" else {}
    budgets = [30, 7, 22, 1, 30]  # mixed stop points, one request done after its prefill
    seeds = [4, 0, 9, 2, 7]
    dec = BatchLeanDecoder(gqa_target, None, head, method, k, max_batch=len(PROMPTS), **kw)
    assert dec.bucket == 8  # 5 requests + 3 frozen padding slots
    assert dec.prefill_together is False  # a CPU prefills one prompt after another ...
    dec.prefill_together = (k + int(temperature)) % 2 == 0  # ... and half the cases take the GPU's one-pass prefill
    batch = dec.generate(list(PROMPTS), budgets, temperature, seeds)
    _same(batch, _alone(gqa_target, head, method, k, PROMPTS, budgets, temperature, seeds, **kw))
    assert [len(r.tokens) for r in batch.results] == budgets
    assert len(batch.step_wall_ms) == max(len(r.steps) for r in batch.results)
    # the same decoder again: nothing of the first batch leaks into the second
    again = dec.generate(list(PROMPTS[:2]), 12, temperature, seeds[:2])
    _same(again, _alone(gqa_target, head, method, k, PROMPTS[:2], [12, 12], temperature, seeds[:2], **kw))


def test_end_of_sequence_stops_one_request_and_not_the_others(gqa_target):
    head = random_head(gqa_target, "peagle", 2)
    free = LeanDecoder(gqa_target, None, head, "peagle", 3).generate(PROMPTS[0], 20)
    eos = free.tokens[6]  # a token the first request emits: it stops there
    batch = BatchLeanDecoder(gqa_target, None, head, "peagle", 3, max_batch=3).generate(
        list(PROMPTS[:3]), 20, eos_token_id=eos)
    _same(batch, _alone(gqa_target, head, "peagle", 3, PROMPTS[:3], [20] * 3, 0.0, [0, 1, 2], eos))
    assert batch.results[0].tokens[-1] == eos and len(batch.results[0].tokens) <= 7


@pytest.mark.slow
def test_shipped_models_at_two_depths():
    """The shipped tiny family, held-out prompts of mixed lengths and budgets, greedy and seeded T=1, at a shallow
    and at the trained depth (every K from 1 to 10 is covered on random models above)."""
    from peagle_nb.models.heads import load_head
    from peagle_nb.models.target import load_target

    target, tok = load_target(MODELS / "tiny-target")
    heads = {m: load_head(MODELS / f"tiny-{m}") for m in ("eagle3", "peagle")}
    texts = [p for name in ("prose", "code", "ja") for p in load_prompts(paths.prompts_dir() / f"{name}.jsonl")[:2]]
    prompts = [tok(t)["input_ids"] for t in texts]
    budgets = [24, 9, 24, 16, 3, 24]
    accepted = 0
    for k in (3, 8):
        for method in ("eagle3", "peagle"):
            for temperature in (0.0, 1.0):
                seeds = [10 * k + i for i in range(len(prompts))]
                dec = BatchLeanDecoder(target, tok, heads[method], method, k, max_batch=len(prompts))
                dec.prefill_together = k == 8  # the GPU's one-pass prefill at the trained depth
                batch = dec.generate(prompts, budgets, temperature, seeds)
                _same(batch, _alone(target, heads[method], method, k, prompts, budgets, temperature, seeds))
                accepted += sum(s.accepted for r in batch.results for s in r.steps)
    assert accepted > 0  # the trained heads' drafts are accepted: the comparison covers acceptance, not only misses


def test_bad_batches_get_clear_errors(gqa_target):
    assert [batch_bucket(n) for n in (1, 3, 8, 33, 64)] == [1, 4, 8, 64, 64]
    with pytest.raises(ValueError, match="at most 64"):
        batch_bucket(BATCH_BUCKETS[-1] + 1)
    with pytest.raises(ValueError, match="at most 64"):
        BatchLeanDecoder(gqa_target, max_batch=65)
    dec = BatchLeanDecoder(gqa_target, max_batch=2)
    with pytest.raises(ValueError, match="max_batch=3"):
        dec.generate([[1], [2], [3]], 4)
    with pytest.raises(ValueError, match="max_position_embeddings"):
        dec.generate([[1], [1] * gqa_target.config.max_position_embeddings], 4)
    with pytest.raises(ValueError, match="one value per prompt"):
        dec.generate([[1], [2]], [4])
