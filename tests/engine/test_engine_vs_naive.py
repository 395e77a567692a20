"""Cross-check against an independent implementation: the cache-free draft-verify loop
(``tests/naive_decoding.py``) must accept the same drafts step by step as the
cached engine, with the shipped trained heads (where acceptance is high, so alignment errors would show)."""

import pytest
import torch

from peagle_nb.files import paths
from peagle_nb.engine import SpecDecoder, load_prompts

MODELS = paths.models_dir()


@pytest.fixture(scope="module")
def target_tok():
    from peagle_nb.models.target import load_target

    return load_target(MODELS / "tiny-target")


@pytest.mark.parametrize("kind,k", [("peagle", 4), ("eagle3", 3)])
def test_engine_accepts_what_the_naive_loop_accepts(target_tok, kind, k):
    from peagle_nb.models.heads import load_head
    from tests.naive_decoding import naive_greedy_decode

    target, tok = target_tok
    head = load_head(MODELS / f"tiny-{kind}")
    prompt = tok(load_prompts(paths.prompts_dir() / "prose.jsonl", 1)[0])["input_ids"]
    new = 20
    naive_tokens, naive_steps = naive_greedy_decode(target, head, torch.tensor(prompt), k, new)
    res = SpecDecoder(target, tok, head, kind, k).generate(prompt, new)
    assert res.tokens == naive_tokens[len(prompt):].tolist()
    n = len(naive_steps)
    assert [s.accepted for s in res.steps[:n]] == list(naive_steps)
    assert sum(naive_steps) > 0, "the trained head should get some drafts accepted"
