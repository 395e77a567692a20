"""Async load generator over a ``Backend``: time to first token, time per output token, output tokens/s,
request throughput and the server's acceptance over each run. Explained in notebook 05.

A backend implements::

    async def stream(self, prompt: str, max_tokens: int, temperature: float) -> AsyncIterator[str]
    def spec_metrics(self) -> dict | None        # cumulative spec-decode counters, or None if unknown
    # optional: describe() -> dict (server config written into the result), name: str

Token counting: a backend may yield, last, a ``UsageChunk`` (an empty str carrying ``completion_tokens``);
otherwise ``count_tokens(text)`` on the backend is used if present, else one token per non-empty chunk.
Acceptance over a run = difference of ``spec_metrics()`` before and after it (the server's own counters).
"""

from __future__ import annotations

import asyncio
import statistics
import threading
import time
from dataclasses import dataclass
from typing import Any, AsyncIterator, Protocol, runtime_checkable

from peagle_nb.files import results


class UsageChunk(str):
    """An empty text chunk that carries the completion's token count (from the server's usage report)."""

    completion_tokens: int

    def __new__(cls, completion_tokens: int):
        obj = super().__new__(cls, "")
        obj.completion_tokens = int(completion_tokens)
        return obj


@runtime_checkable
class Backend(Protocol):
    def stream(self, prompt: str, max_tokens: int, temperature: float) -> AsyncIterator[str]: ...

    def spec_metrics(self) -> dict | None: ...


@dataclass
class RequestResult:
    ok: bool
    start: float
    end: float
    first_token: float | None = None
    output_tokens: int = 0
    text: str = ""
    error: str | None = None

    @property
    def ttft_s(self) -> float | None:
        return None if self.first_token is None else self.first_token - self.start

    @property
    def tpot_s(self) -> float | None:
        if self.first_token is None or self.output_tokens < 2:
            return None
        return (self.end - self.first_token) / (self.output_tokens - 1)


async def one_request(backend, prompt: str, max_tokens: int, temperature: float) -> RequestResult:
    start = time.perf_counter()
    res = RequestResult(ok=False, start=start, end=start)
    chunks: list[str] = []
    usage = None
    try:
        async for chunk in backend.stream(prompt, max_tokens, temperature):
            if isinstance(chunk, UsageChunk):
                usage = chunk.completion_tokens
                continue
            if chunk and res.first_token is None:
                res.first_token = time.perf_counter()
            chunks.append(chunk)
        res.ok = True
    except Exception as exc:  # noqa: BLE001 - one failed request is recorded, the run goes on
        res.error = f"{type(exc).__name__}: {exc}"
    res.end = time.perf_counter()
    res.text = "".join(chunks)
    if usage is not None:
        res.output_tokens = usage
    elif hasattr(backend, "count_tokens"):
        res.output_tokens = int(backend.count_tokens(res.text))
    else:
        res.output_tokens = sum(1 for c in chunks if c)
    return res


async def run_level(backend, prompts: list[str], concurrency: int, max_tokens: int,
                    temperature: float) -> tuple[list[RequestResult], float]:
    """All ``prompts`` with at most ``concurrency`` in flight; returns results and wall time."""
    queue: asyncio.Queue[str] = asyncio.Queue()
    for p in prompts:
        queue.put_nowait(p)
    out: list[RequestResult] = []

    async def worker():
        while True:
            try:
                prompt = queue.get_nowait()
            except asyncio.QueueEmpty:
                return
            out.append(await one_request(backend, prompt, max_tokens, temperature))

    t0 = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return out, time.perf_counter() - t0


def _ms(values: list[float]) -> dict[str, float | None]:
    if not values:
        return {"mean": None, "p50": None, "p90": None}
    vs = sorted(values)
    return {"mean": 1000 * statistics.fmean(vs), "p50": 1000 * vs[len(vs) // 2],
            "p90": 1000 * vs[min(len(vs) - 1, int(0.9 * len(vs)))]}


def summarize_level(reqs: list[RequestResult], wall_s: float) -> dict[str, Any]:
    ok = [r for r in reqs if r.ok]
    ttft = _ms([r.ttft_s for r in ok if r.ttft_s is not None])
    tpot = _ms([r.tpot_s for r in ok if r.tpot_s is not None])
    tokens = sum(r.output_tokens for r in ok)
    return {
        "n_requests": len(reqs), "n_failed": len(reqs) - len(ok),
        "errors": sorted({r.error for r in reqs if r.error})[:3],
        "output_tokens": tokens, "wall_s": wall_s,
        "tokens_per_s": tokens / wall_s if wall_s > 0 else None,
        "request_throughput": len(ok) / wall_s if wall_s > 0 else None,
        "ttft_ms": ttft["mean"], "ttft_ms_p50": ttft["p50"], "ttft_ms_p90": ttft["p90"],
        "tpot_ms": tpot["mean"], "tpot_ms_p50": tpot["p50"], "tpot_ms_p90": tpot["p90"],
    }


async def run_benchmark_async(backend, prompts: list[str], concurrency=(1, 4), max_tokens: int = 64, *,
                              source: str = "vllm", model: dict | None = None, notes: str | None = None,
                              **level_options) -> dict[str, Any]:
    """Every concurrency level measured (:func:`measure_levels`, which takes ``level_options`` by name:
    ``temperature``, ``requests_per_level``, ``warmup_requests``, ``method``, ``k``, ``prompt_set``) as a
    ``peagle_nb.files.results`` document of ``source``, with ``model`` (and the backend's own description) and
    ``notes``."""
    runs = await measure_levels(backend, prompts, concurrency, max_tokens, **level_options)
    describe = getattr(backend, "describe", None)
    model = {**(model or {}), **({"server": describe()} if callable(describe) else {})}
    return results.make_results(source, runs, model=model or None, notes=notes)


async def measure_levels(backend, prompts: list[str], concurrency=(1, 4), max_tokens: int = 64,
                         temperature: float = 0.0, requests_per_level: int | None = None, warmup_requests: int = 1,
                         method: str | None = None, k: int | None = None, prompt_set: str | None = None
                         ) -> list[dict[str, Any]]:
    """One run record per concurrency level: ``requests_per_level`` requests (default: every prompt, at least one
    per slot) after ``warmup_requests`` untimed ones, with the server's speculative counters' change over the level
    (tau, per-position acceptance) where the backend reports them. ``method``, ``k``, ``prompt_set``: labels."""
    if not prompts:
        raise ValueError("no prompts: pass at least one prompt (e.g. data/prompts/prose.jsonl)")
    levels = [int(c) for c in concurrency]
    if any(c < 1 for c in levels):
        raise ValueError(f"concurrency levels must be >= 1, got {levels}")
    for p in prompts[:warmup_requests]:  # first request pays one-off costs (graph capture, caches)
        await one_request(backend, p, max_tokens, temperature)
    runs = []
    for c in levels:
        n = requests_per_level or max(len(prompts), c)
        batch = [prompts[i % len(prompts)] for i in range(n)]
        before = backend.spec_metrics()
        reqs, wall = await run_level(backend, batch, c, max_tokens, temperature)
        after = backend.spec_metrics()
        run: dict[str, Any] = {"concurrency": c, "max_tokens": max_tokens, "temperature": temperature,
                               "n_prompts": len(set(batch)), **summarize_level(reqs, wall)}
        if method is not None:
            run["method"] = method
        if k is not None:
            run["k"] = k if method != "none" else 0
        if prompt_set:
            run["prompt_set"] = prompt_set
        if before is not None and after is not None:
            from peagle_nb.serving.metrics import delta

            d = delta(before, after)
            run.update(num_drafts=d["num_drafts"], num_draft_tokens=d["num_draft_tokens"],
                       num_accepted_tokens=d["num_accepted_tokens"])
            if d["num_drafts"]:
                run["tau"] = d["tau"]
                rates = d["accept_rate_per_position"]
                if k is None or len(rates) == k:
                    run["accept_rate_per_position"] = rates
        runs.append(run)
    return runs


def run_benchmark(backend, prompts: list[str], concurrency=(1, 4), max_tokens: int = 64, **kwargs) -> dict[str, Any]:
    """Synchronous wrapper; works inside Jupyter (whose event loop is already running) via a thread."""
    def coro_fn():
        return run_benchmark_async(backend, prompts, concurrency, max_tokens, **kwargs)

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro_fn())
    box: dict[str, Any] = {}

    def target():
        try:
            box["doc"] = asyncio.run(coro_fn())
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
            box["exc"] = exc

    t = threading.Thread(target=target)
    t.start()
    t.join()
    if "exc" in box:
        raise box["exc"]
    return box["doc"]
