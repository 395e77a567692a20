"""tau, per-position rates, conditional alphas (vLLM's conventions, notebook 01) and per-step statistics."""

import pytest

from peagle_nb.analysis import metrics
from peagle_nb.engine import SpecDecoder
from peagle_nb.engine.evaluate import evaluate, summarize_sweep
from tests.engine.helpers import OracleHead, tiny_target


def test_metrics_by_hand():
    acc = [3, 0, 1, 3, 2]
    assert metrics.acceptance_length(acc) == pytest.approx(1 + 9 / 5)
    assert metrics.per_position_rates(acc, 3) == pytest.approx([4 / 5, 3 / 5, 2 / 5])
    alphas = metrics.conditional_alphas([0.8, 0.6, 0.0, 0.0])
    assert alphas[:3] == pytest.approx([0.8, 0.75, 0.0]) and alphas[3] is None
    assert metrics.expected_tokens_per_step(0.5, 3) == pytest.approx(1 + 0.5 + 0.25 + 0.125)
    assert metrics.expected_tokens_per_step(1.0, 3) == 4
    assert metrics.summarize([], 2)["tau"] == 1.0


def test_tau_equals_sum_of_rates():
    """tau - 1 = sum_j a_j: a property that ties the two definitions together."""
    acc = [0, 5, 2, 2, 7, 1]
    assert metrics.acceptance_length(acc) - 1 == pytest.approx(sum(metrics.per_position_rates(acc, 7)))


@pytest.fixture(scope="module")
def setup():
    t = tiny_target()
    prompt = [3, 9, 12, 40, 7, 7, 1]
    ref = SpecDecoder(t).generate(prompt, 30).tokens
    return t, prompt, ref


def test_step_stats_are_consistent(setup):
    t, prompt, ref = setup
    n = len(prompt)
    head = OracleHead(t, prompt + ref, "peagle", wrong_positions={n + 4, n + 5, n + 17})
    res = SpecDecoder(t, None, head, "peagle", 4).generate(prompt, 30)
    assert res.tokens == ref
    assert 1 + sum(s.new_tokens for s in res.steps) >= 30  # first token comes from prefill
    for s in res.steps:
        assert s.num_drafts == 4 and 0 <= s.accepted <= 4 and s.new_tokens == s.accepted + 1
        assert s.draft_ms > 0 and s.verify_ms > 0
    rates = res.accept_rate_per_position()
    assert rates == sorted(rates, reverse=True)  # a prefix is accepted: rates never rise with position
    assert res.tau == pytest.approx(1 + sum(rates))


def test_evaluate_record(setup):
    t, prompt, ref = setup

    class Tok:  # prompts given as ids need no tokenizer work
        pass

    head = OracleHead(t, prompt + ref, "eagle3")
    rec = evaluate(t, Tok(), head, "eagle3", 3, [prompt], max_new_tokens=30, engine="reference")  # the oracle
    # drives the reference engine (the lean engine reads a real head's weights)
    for key in ("method", "k", "n_prompts", "tau", "accept_rate_per_position", "tokens_per_s",
                "draft_ms_per_step", "verify_ms_per_step", "lossless"):
        assert key in rec
    assert rec["lossless"] is True and rec["k"] == 3 and len(rec["accept_rate_per_position"]) == 3
    assert rec["tau"] == pytest.approx(4.0, abs=0.5)  # the oracle is right everywhere
    base = evaluate(t, Tok(), None, "none", 1, [prompt], max_new_tokens=30, engine="reference")
    assert base["k"] == 0 and base["tau"] == 1.0 and base["lossless"] is True

    s = summarize_sweep([{"prompt_set": "x", **base}, {"prompt_set": "x", **rec}])
    assert s["x"]["eagle3.best_k"] == 3


def test_lossless_flag_catches_a_broken_engine(setup, monkeypatch):
    """If verification kept a wrong draft, evaluate() must report lossless=False."""
    t, prompt, ref = setup
    import peagle_nb.engine.decoder as dec_mod

    def always_accept(drafts, logits):
        return len(drafts), int(logits[-1].argmax())

    monkeypatch.setattr(dec_mod, "verify_greedy", always_accept)
    head = OracleHead(t, [], "peagle", soft_scale=3.0)
    rec = evaluate(t, None, head, "peagle", 3, [prompt], max_new_tokens=20, warmup=False, engine="reference")
    assert rec["lossless"] is False


def test_lossless_flag_catches_a_broken_lean_engine(monkeypatch):
    """The lean engine's output is checked against the reference engine's plain decoding: a lean verification
    that keeps every draft must show up as lossless=False."""
    import torch

    import peagle_nb.engine.lean.decoder as lean_mod
    from peagle_nb.models.heads import DraftHead, config_for_target
    from tests.engine.helpers import tiny_target

    t = tiny_target(dtype=torch.float32)
    head = DraftHead(config_for_target(t.config, "peagle", num_layers=2, draft_vocab_size=32, mask_token_id=63,
                                       trained_k=4)).eval()

    def keep_everything(drafts, target_tokens, check_values=None):
        return (torch.full((1,), drafts.shape[1], dtype=torch.int32), target_tokens[:, -1],
                torch.zeros(1, dtype=torch.int32))

    monkeypatch.setattr(lean_mod, "greedy_verify", keep_everything)
    rec = evaluate(t, None, head, "peagle", 3, [[5, 6, 7, 8]], max_new_tokens=20, warmup=False)
    assert rec["engine"] == "lean" and rec["lossless"] is False


def test_summary_drops_a_sweep_the_budget_cut_short():
    """A time budget that ends mid-sweep leaves a sweep without some configurations: the summary compares only
    complete sweeps and says how many it dropped (it once failed with 'no runs of method')."""
    def run(method, k, sweep, tps):
        return {"prompt_set": "x", "sweep": sweep, "method": method, "k": k, "tokens_per_s": tps, "tau": 1.0 + k / 2,
                "accept_rate_per_position": [0.5] * k, "lossless": True, "draft_ms_per_step": 0.1,
                "verify_ms_per_step": 0.2}

    runs = [run("none", 0, i, 100.0) for i in (0, 1)] + [run("eagle3", 2, i, 150.0) for i in (0, 1)]
    runs += [run("peagle", 2, 0, 120.0)]  # sweep 1 ended before P-EAGLE
    s = summarize_sweep(runs)["x"]
    assert s["sweeps"] == 1 and s["incomplete_sweeps_dropped"] == 1
    assert s["peagle.best_k"] == 2 and s["eagle3.speedup_vs_none_at_best_k"]["median"] == pytest.approx(1.5)


def test_tau_by_output_position_splits_each_prompt_at_the_edge():
    from peagle_nb.analysis.metrics import tau_by_output_position

    # prompt 1: steps keep 3, 3, 0, 0 -> they start at outputs 1, 5, 9, 10; prompt 2: 1, 1 -> start at 1, 3
    early, late = tau_by_output_position([3, 3, 0, 0, 1, 1], [4, 2], edge=9)
    assert early == pytest.approx(1 + (3 + 3 + 1 + 1) / 4) and late == pytest.approx(1.0)
    with pytest.raises(ValueError, match="steps_per_prompt sums to"):
        tau_by_output_position([1, 2], [3], 4)
