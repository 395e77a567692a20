"""The offline engine (``vllm.LLM``) for the suite's models: in-process mode for tests and notebooks,
greedy generation from token ids, spec-decode counters, and a count of drafter forward passes per step.
Explained in notebook 05.

In-process mode (``VLLM_ENABLE_V1_MULTIPROCESSING=0``, ``distributed_executor_backend="uni"``,
``enforce_eager=True``) starts in a few seconds on a CPU and lets us hook vLLM's own drafter module.
"""

from __future__ import annotations

import gc
import os
from contextlib import contextmanager
from typing import Any, Iterator

from peagle_nb.machine import runtime_env
from peagle_nb.serving import _deps


_SET_NUM_THREADS = None  # torch's own set_num_threads, saved before the first engine starts


def make_llm(model: str, speculative_config: dict | None = None, *, in_process: bool = True, seed: int = 0,
             max_model_len: int | None = None, dtype: str = "float32", fix_cpu_sampling: bool = True,
             **kwargs: Any):
    """A ``vllm.LLM`` for ``model`` with an optional speculative config (stats logging on, so
    ``llm.get_metrics()`` has the spec-decode counters). In-process, ``fix_cpu_sampling`` installs
    :mod:`peagle_nb.serving.cpu_sampling_fix` where the CPU build needs it (False: vLLM as shipped)."""
    from peagle_nb.serving import cpu_sampling_fix

    runtime_env.apply_defaults()
    if in_process:
        os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"
        kwargs.setdefault("distributed_executor_backend", "uni")
        kwargs.setdefault("enforce_eager", True)
        if fix_cpu_sampling:
            cpu_sampling_fix.install()
        else:
            cpu_sampling_fix.uninstall()
    if max_model_len is not None:  # default: the model's max_position_embeddings
        kwargs["max_model_len"] = max_model_len
    import torch

    global _SET_NUM_THREADS
    if _SET_NUM_THREADS is None:
        _SET_NUM_THREADS = torch.set_num_threads
    vllm = _deps.vllm()
    # an in-process CPU worker replaces torch.set_num_threads by a no-op for the whole process; close_llm puts
    # torch's own back, so the suite's engine can choose its threads again after vLLM is gone
    return vllm.LLM(model=model, speculative_config=speculative_config, seed=seed, dtype=dtype,
                    disable_log_stats=False, **kwargs)


def close_llm(llm) -> None:
    """Shut an engine down and free its memory before the next one starts."""
    try:
        llm.llm_engine.engine_core.shutdown()
    except Exception:  # noqa: BLE001 - best effort: the engine may already be gone
        pass
    del llm
    gc.collect()
    if _SET_NUM_THREADS is not None:
        import torch

        torch.set_num_threads = _SET_NUM_THREADS


def request_seed(seed: int, index: int) -> int:
    """The seed of request ``index`` in a run seeded with ``seed`` (distinct for up to 1000 requests a run)."""
    return seed * 1000 + index


def generate_ids(llm, prompt_ids: list[list[int]], max_tokens: int, temperature: float = 0.0,
                 seed: int = 0) -> list[list[int]]:
    """Generate from token ids (no re-tokenisation, so the suite's engine sees exactly the same input).
    Request i is seeded with :func:`request_seed` ``(seed, i)``: one seed shared by every request would give
    them all the same stream of uniform draws, so their acceptance would not be independent samples."""
    if len(prompt_ids) >= 1000:  # request_seed would repeat the next run's seeds
        raise ValueError(f"{len(prompt_ids)} prompts in one call: at most 999 (request seeds are seed*1000 + i); "
                         "split the prompts into several calls")
    vllm = _deps.vllm()
    sps = [vllm.SamplingParams(temperature=temperature, max_tokens=max_tokens, seed=request_seed(seed, i),
                               ignore_eos=True) for i in range(len(prompt_ids))]
    outs = llm.generate([{"prompt_token_ids": list(p)} for p in prompt_ids], sps, use_tqdm=False)
    return [list(o.outputs[0].token_ids) for o in outs]


def spec_metrics(llm) -> dict[str, Any]:
    """Spec-decode counters from the engine's own Prometheus metrics (``llm.get_metrics()``), in the
    same shape as :func:`peagle_nb.serving.metrics.read_spec_decode_metrics`."""
    from peagle_nb.serving.metrics import summarize

    drafts = tokens = accepted = 0.0
    per_pos: list[float] = []
    gen = 0.0
    for m in llm.get_metrics():
        if m.name == "vllm:spec_decode_num_drafts":
            drafts += m.value
        elif m.name == "vllm:spec_decode_num_draft_tokens":
            tokens += m.value
        elif m.name == "vllm:spec_decode_num_accepted_tokens":
            accepted += m.value
        elif m.name == "vllm:spec_decode_num_accepted_tokens_per_pos":
            per_pos = [a + b for a, b in zip(per_pos, m.values)] if per_pos else list(m.values)
        elif m.name == "vllm:generation_tokens":
            gen += m.value
    return summarize(drafts, tokens, accepted, per_pos, gen)


def _runner(worker):
    return worker.model_runner


@contextmanager
def count_forward_passes(llm) -> Iterator[dict[str, Any]]:
    """Count target and drafter forward passes inside vLLM (in-process engines only) and keep the first
    drafter inputs. Yields a dict filled in as generation runs:
    ``{"target": n, "drafter": n, "drafter_inputs": [[token ids of a pass], ...]}``."""
    counts: dict[str, Any] = {"target": 0, "drafter": 0, "drafter_inputs": []}
    handles = []

    def install(worker):
        runner = _runner(worker)
        drafter = getattr(runner, "drafter", None)

        def on_target(module, args, kwargs):
            counts["target"] += 1

        def on_drafter(module, args, kwargs):
            counts["drafter"] += 1
            ids = kwargs.get("input_ids", args[0] if args else None)
            if ids is not None and len(counts["drafter_inputs"]) < 16:
                counts["drafter_inputs"].append(ids.tolist())

        handles.append(runner.model.register_forward_pre_hook(on_target, with_kwargs=True))
        if drafter is not None:
            handles.append(drafter.model.register_forward_pre_hook(on_drafter, with_kwargs=True))
        return drafter is not None

    if os.environ.get("VLLM_ENABLE_V1_MULTIPROCESSING", "1") != "0":
        raise RuntimeError("count_forward_passes needs an in-process engine: make_llm(..., in_process=True)")
    llm.collective_rpc(install)
    try:
        yield counts
    finally:
        for h in handles:
            h.remove()
