"""Picking notebook 01's examples from real decodings: the long step, the loop, the marked text."""

import pytest

from peagle_nb.engine.stats import GenerationResult, StepStats
from peagle_nb.analysis.worked_examples import find_long_step, find_loop, mark_repeats


class ScriptedDecoder:
    """``generate`` returns a fixed continuation and steps per prompt (keyed by the prompt's first token)."""

    def __init__(self, outputs):
        self.outputs, self.calls = outputs, []

    def generate(self, prompt, max_new_tokens):
        self.calls.append(list(prompt))
        tokens, accepted = self.outputs[prompt[0]]
        return GenerationResult(list(tokens), [StepStats(7, a, a + 1, 0.0, 0.0) for a in accepted])


LOOP = [5, 6, 7, 8, 9, 10, 11, 12] * 3  # 24 tokens: the 2nd and 3rd copies are repeats (16 of 24)


def test_find_long_step_prefers_fresh_text_and_names_the_prefix():
    fresh = list(range(20, 40))
    # prompt 100: its only long step starts at generated index 1 + 4 * 2 = 9, inside the loop's second copy
    dec = ScriptedDecoder({100: (LOOP, [1, 1, 1, 1, 5, 2]), 200: (fresh, [0, 4, 1])})
    got = find_long_step(dec, [[100, 1], [200, 1]], 24, min_accepted=4)
    assert got["prompt_index"] == 1 and got["step_index"] == 1 and got["accepted"] == 4 and not got["repeated"]
    # step 1 starts after the prefill token and step 0's single token: generated index 2, bonus = generated[1]
    assert got["start"] == 2 and got["bonus"] == fresh[1] and got["prefix"] == [200, 1, fresh[0]]
    only_loop = find_long_step(ScriptedDecoder({100: (LOOP, [1, 1, 1, 1, 5, 2])}), [[100, 1]], 24)
    assert only_loop["repeated"] and only_loop["step_index"] == 4 and only_loop["start"] == 9
    assert find_long_step(ScriptedDecoder({200: (fresh, [0, 1])}), [[200]], 20) is None
    # a condition on the kept drafts: step 1 of prompt 200 keeps generated[2:6] = 22..25
    assert find_long_step(dec, [[200, 1]], 20, kept_ok=lambda ids: ids == [22, 23, 24, 25])["step_index"] == 1
    assert find_long_step(dec, [[200, 1]], 20, kept_ok=lambda ids: 22 not in ids) is None
    with pytest.raises(ValueError, match="min_accepted"):
        find_long_step(dec, [[100]], 8, min_accepted=0)


def test_find_long_step_skips_a_step_the_token_limit_cut():
    """The last step of a generation may keep drafts past the token limit: only the tokens inside it exist, so
    such a step is no example of its accepted count (kept_ok once saw only its first kept draft)."""
    cut = list(range(20, 26))  # 6 tokens: step 1 starts at generated index 2 and keeps 5 drafts, only 4 exist
    dec = ScriptedDecoder({200: (cut, [0, 5])})
    assert find_long_step(dec, [[200, 1]], 6, min_accepted=4) is None
    assert find_long_step(dec, [[200, 1]], 6, min_accepted=4, kept_ok=lambda ids: True) is None


def test_find_loop_stops_at_the_first_looping_prompt():
    fresh = list(range(20, 44))
    dec = ScriptedDecoder({1: (fresh, []), 2: (LOOP, []), 3: (LOOP, [])})
    got = find_loop(dec, [[1], [2], [3]], 24, min_fraction=0.5)
    assert got["prompt_index"] == 1 and got["fraction"] == pytest.approx(16 / 24) and got["searched"] == 2
    assert got["mask"] == [False] * 8 + [True] * 16 and len(dec.calls) == 2
    none = find_loop(ScriptedDecoder({1: (fresh, [])}), [[1]], 24, min_fraction=0.5)
    assert none["fraction"] == 0.0 and none["searched"] == 1  # the most repetitive one when none loops
    with pytest.raises(ValueError, match="no prompts"):
        find_loop(dec, [], 8)


def test_mark_repeats_wraps_each_run():
    def decode(ids: list[int]) -> str:  # a one-letter-per-token tokenizer
        return "".join(chr(ord("a") + i) for i in ids)

    assert mark_repeats(decode, [0, 1, 2, 3, 4], [False, True, True, False, True]) == "a⟦bc⟧d⟦e⟧"
    assert mark_repeats(decode, [0, 1], [True, True], "<", ">") == "<ab>"
    assert mark_repeats(decode, [], []) == ""
    with pytest.raises(ValueError, match="one mask value per token"):
        mark_repeats(decode, [0, 1], [True])


def test_the_lean_engine_searches_in_batches_that_give_each_prompt_its_own_run():
    import torch

    from peagle_nb.analysis.worked_examples import greedy_runs
    from peagle_nb.engine.lean import LeanDecoder
    from peagle_nb.engine.lean.batch import batched_twin
    from peagle_nb.files import paths
    from peagle_nb.models.heads import load_head
    from peagle_nb.models.target import load_target

    target, tok = load_target(paths.models_dir() / "tiny-target")
    head = load_head(paths.models_dir() / "tiny-peagle")
    dec = LeanDecoder(target, tok, head, "peagle", 7)
    prompts = [tok(t)["input_ids"] for t in ("The old house", "def add(a, b):", "It was late", "import os")]
    alone = [dec.generate(p, 24) for p in prompts]
    got = list(greedy_runs(dec, prompts, 24, batch=2))  # two batches of two
    assert [r.tokens for r in got] == [r.tokens for r in alone]
    assert [[s.accepted for s in r.steps] for r in got] == [[s.accepted for s in r.steps] for r in alone]
    assert sum(s.accepted for r in got for s in r.steps) > 0  # the trained head keeps drafts: the runs are compared
    twin = batched_twin(dec, 2)
    assert twin is not None and batched_twin(twin) is None  # a batched engine has no further twin
    by_hand = LeanDecoder(target, tok, head, "peagle", 7, mask_hidden=torch.zeros(head.mask_hidden.numel()))
    assert batched_twin(by_hand) is None  # hand-set placeholders: the batched engine has no such setting
    # a decoder without a twin (the scripted one) is asked prompt by prompt
    scripted = ScriptedDecoder({100: ([1, 2], [0]), 200: ([3, 4], [1])})
    assert [r.tokens for r in greedy_runs(scripted, [[100], [200]], 2)] == [[1, 2], [3, 4]]
    assert scripted.calls == [[100], [200]]
