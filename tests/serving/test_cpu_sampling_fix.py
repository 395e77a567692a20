"""vLLM's CPU build at temperature > 0: its expand kernel leaves the float buffer unwritten (the bug
peagle_nb.serving.cpu_sampling_fix works around), the plain-PyTorch expand has vLLM's semantics, and the sweep's
sampled runs near temperature 0 accept drafts with the fix and almost none without it (notebook 05's test compares
both with greedy)."""

from __future__ import annotations

import pytest
import torch

from peagle_nb.serving import cpu_sampling_fix

pytestmark = [pytest.mark.vllm]


def test_expand_repeats_each_requests_value_for_its_tokens():
    x = torch.tensor([0.0, 0.7, 1.5])
    got = cpu_sampling_fix.expand_batch_to_tokens(x, torch.tensor([2, 5, 6], dtype=torch.int32), 6,
                                                  replace_from=0, replace_to=1)
    assert got.dtype == x.dtype and got.tolist() == pytest.approx([1.0, 1.0, 0.7, 0.7, 0.7, 1.5])
    ints = cpu_sampling_fix.expand_batch_to_tokens(torch.tensor([3, -1]), torch.tensor([1, 3]), 3)
    assert ints.tolist() == [3, -1, -1]
    with pytest.raises(ValueError, match="expected 4"):
        cpu_sampling_fix.expand_batch_to_tokens(x, torch.tensor([2, 5, 6]), 4)


def test_the_probe_finds_the_cpu_kernel_broken_and_install_is_reversible():
    from vllm.v1.sample import rejection_sampler

    cpu_sampling_fix.uninstall()  # an earlier in-process engine of this session may have left the fix in place
    original = rejection_sampler.expand_batch_to_tokens
    if not cpu_sampling_fix.vllm_cpu_expand_is_broken():  # a vLLM release that fixed it: nothing is patched
        assert cpu_sampling_fix.install() is False and not cpu_sampling_fix.active()
        return
    x, cu = torch.tensor([0.5, 2.0]), torch.tensor([1, 3])
    try:
        assert cpu_sampling_fix.install() is True and cpu_sampling_fix.active()
        assert torch.equal(rejection_sampler.expand_batch_to_tokens(x, cu, 3), torch.tensor([0.5, 2.0, 2.0]))
    finally:
        cpu_sampling_fix.uninstall()
    assert rejection_sampler.expand_batch_to_tokens is original and not cpu_sampling_fix.active()


@pytest.mark.slow
def test_the_sweep_samples_near_temperature_zero_with_the_fix_and_without_it_on_request(tiny_models, prompt_ids):
    # The same head at greedy beside both (fixed: about greedy's acceptance; as shipped: almost none) is notebook
    # 05's sampling-fix cell, asserted by tests/notebooks/test_05_serve_peagle_in_vllm.py. Here: the sweep's
    # fix_cpu_sampling switch reaches the engine, each run records it, and torch works again after the engines.
    from peagle_nb.lab.sweeps import vllm_sweep as sweep

    if not tiny_models.trained:
        pytest.skip("needs the trained heads: random heads get nothing accepted either way")
    heads = {"eagle3": str(tiny_models.eagle3)}
    sets = {"prose": prompt_ids}
    fixed = sweep.acceptance_runs(str(tiny_models.target), heads, sets, 7, 24, log=lambda *_: None,
                                  temperature=0.01, seed=0)
    try:
        shipped = sweep.acceptance_runs(str(tiny_models.target), heads, sets, 7, 24, log=lambda *_: None,
                                        temperature=0.01, seed=0, fix_cpu_sampling=False)
    finally:
        cpu_sampling_fix.install()
    assert [r["method"] for r in fixed] == [r["method"] for r in shipped] == ["eagle3"]  # no plain engine to compare
    fixed, shipped = fixed[0], shipped[0]
    assert fixed["cpu_sampling_fix"] is True and fixed["lossless"] is None and fixed["temperature"] == 0.01
    # vLLM's CPU worker disables torch.set_num_threads in its process; once its engines are closed it works again
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    assert torch.get_num_threads() == 1
    torch.set_num_threads(before)
    assert fixed["tau"] > 1.5  # at T=0.01 nearly greedy: the trained head gets drafts accepted (~2.5 measured)
    if cpu_sampling_fix.vllm_cpu_expand_is_broken():  # as shipped: drafts rejected
        assert shipped["cpu_sampling_fix"] is False
        # The temperatures are whatever the freed memory the buffer reuses held, so how much is lost depends on what
        # ran before in this process: ~1.01 in a fresh one, 1.5 once in CI's long-lived pytest (fixed: 2.09). How
        # little is left is asserted in a fresh kernel by notebook 05's test; here, that the switch changes it.
        assert shipped["tau"] < fixed["tau"], (shipped["tau"], fixed["tau"])


def test_each_request_gets_its_own_seed_and_too_many_prompts_are_refused():
    from peagle_nb.serving import offline

    seeds = [offline.request_seed(s, i) for s in (0, 1) for i in range(999)]
    assert len(set(seeds)) == len(seeds)  # distinct within a run and across runs
    with pytest.raises(ValueError, match="at most 999"):
        offline.generate_ids(None, [[1]] * 1000, max_tokens=1)
