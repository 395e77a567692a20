"""Real vLLM (in-process) serving the tiny target with its EAGLE-3 and P-EAGLE heads: greedy output
identical to no speculation, exactly one drafter pass per step with parallel drafting (K with EAGLE-3),
and vLLM's acceptance length within 10% of the suite's own engine on the same prompts, K, temperature 0."""

from __future__ import annotations

import pytest

from peagle_nb.models import checkpoint
from peagle_nb.serving import config
from peagle_nb.lab.sweeps import vllm_sweep as sweep

pytestmark = [pytest.mark.vllm, pytest.mark.slow]

MAX_TOKENS = 24
K_EAGLE3 = 3


@pytest.fixture(scope="session")
def vllm_runs(tiny_models, prompt_ids):
    """One in-process engine per configuration for the whole session."""
    out = {}
    for method, head, k in (("none", None, 0), ("eagle3", tiny_models.eagle3, K_EAGLE3),
                            ("peagle", tiny_models.peagle, tiny_models.peagle_k)):
        runs, outputs = sweep.measure_config(str(tiny_models.target), method, head and str(head), k, prompt_ids,
                                             concurrency=(1,), max_tokens=MAX_TOKENS)
        out[method] = (runs[0], outputs)
    return out


def test_greedy_output_identical_to_no_speculation(vllm_runs):
    ref = vllm_runs["none"][1]
    assert all(len(o) == MAX_TOKENS for o in ref)
    assert vllm_runs["eagle3"][1] == ref
    assert vllm_runs["peagle"][1] == ref


def test_exactly_one_drafter_pass_per_step_with_parallel_drafting(vllm_runs, tiny_models):
    peagle, eagle3, none = vllm_runs["peagle"][0], vllm_runs["eagle3"][0], vllm_runs["none"][0]
    # Counted with forward hooks on vLLM's own target and drafter modules.
    assert peagle["target_passes"] > 0 and peagle["drafter_passes"] == peagle["target_passes"]
    assert eagle3["drafter_passes"] == K_EAGLE3 * eagle3["target_passes"]
    assert none["drafter_passes"] == 0


def test_vllm_counters_are_consistent(vllm_runs, tiny_models):
    for method, k in (("eagle3", K_EAGLE3), ("peagle", tiny_models.peagle_k)):
        run = vllm_runs[method][0]
        assert run["num_draft_tokens"] == k * run["num_drafts"] > 0
        assert 0 <= run["num_accepted_tokens"] <= run["num_draft_tokens"]
        assert len(run["accept_rate_per_position"]) == k
        rates = run["accept_rate_per_position"]
        assert all(a >= b for a, b in zip(rates, rates[1:]))  # unconditional rates cannot grow with depth
        # the raw data each summary is made of is kept in the record (tests/test_provenance.py recomputes it)
        assert [c / run["num_drafts"] for c in run["accepted_per_position"]] == rates
        assert run["wall_s"] == min(run["wall_s_repeats"]) and len(run["ttft_ms_requests"]) == run["n_prompts"]
        assert run["ttft_ms"] == pytest.approx(sum(run["ttft_ms_requests"]) / run["n_prompts"])


def test_acceptance_length_matches_the_suite_engine(vllm_runs, tiny_models, prompt_ids):
    from peagle_nb.engine import evaluate
    from peagle_nb.models.heads import load_head
    from peagle_nb.models.target import load_target

    target, tok = load_target(tiny_models.target)
    for method, head_dir, k in (("eagle3", tiny_models.eagle3, K_EAGLE3),
                                ("peagle", tiny_models.peagle, tiny_models.peagle_k)):
        rec = evaluate(target, tok, load_head(head_dir, target=target), method, k, prompts=prompt_ids,
                       max_new_tokens=MAX_TOKENS, warmup=False, reference=vllm_runs["none"][1])
        tau_vllm = vllm_runs[method][0]["tau"]
        assert abs(tau_vllm - rec["tau"]) <= 0.10 * rec["tau"], (method, tau_vllm, rec["tau"])
        if tiny_models.trained:
            assert rec["tau"] > 1.2  # a trained head gets drafts accepted, so the comparison means something


def test_bad_head_is_rejected_before_an_engine_starts(tiny_models):
    with pytest.raises(checkpoint.HeadCheckpointError, match="EAGLE-3 head .* parallel drafting"):
        config.check_local_head(tiny_models.eagle3, tiny_models.target, 3, "peagle")
    trained = checkpoint.read_config(tiny_models.peagle).get("peagle_trained_k")
    if trained:
        with pytest.raises(checkpoint.HeadCheckpointError, match="above the depth"):
            sweep.measure_config(str(tiny_models.target), "peagle", str(tiny_models.peagle), trained + 1, [[1, 2]],
                                 (1,), 4)
