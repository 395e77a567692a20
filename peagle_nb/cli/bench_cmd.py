"""``peagle-nb bench --base-url URL --prompts FILE --concurrency 1,4,16``: load an OpenAI-compatible
endpoint at several concurrency levels; TTFT, TPOT, tokens/s, requests/s and the server's acceptance."""

from __future__ import annotations

import json


def add_arguments(p) -> None:
    from peagle_nb.cli.errors import positive_int

    p.add_argument("--base-url", required=True, help="e.g. http://127.0.0.1:8000 (with or without /v1)")
    p.add_argument("--prompts", required=True, help="JSONL with a 'prompt' field per line, or text lines")
    p.add_argument("--concurrency", default="1,4", help="comma-separated levels (default 1,4)")
    p.add_argument("--max-tokens", type=positive_int, default=64)
    p.add_argument("--temperature", type=float, default=0.0)
    p.add_argument("--requests", type=int, default=None, help="requests per level (default: #prompts)")
    p.add_argument("--limit", type=int, default=None, help="use the first N prompts")
    p.add_argument("--model", default=None, help="model name (default: the server's first)")
    p.add_argument("--method", choices=["none", "eagle3", "peagle"], default=None, help="label for the results")
    p.add_argument("--k", type=int, default=None, help="label: num_speculative_tokens of the server")
    p.add_argument("--source", choices=["vllm", "endpoint"], default="endpoint")
    p.add_argument("--out", default=None, help="write the results JSON here (peagle_nb.files.results format)")


def _backend(backend_cls, base_url: str, model: str | None):
    """The endpoint's client; an endpoint that does not answer is bad input, said in one sentence."""
    import openai

    try:
        return backend_cls(base_url, model=model)
    except openai.APIConnectionError as exc:
        raise ConnectionError(f"cannot reach {base_url} ({exc}). Fix: start a server (`peagle-nb serve --preset "
                              f"tiny-peagle`) or pass the --base-url of a running one.") from None


def run(args) -> int:
    from peagle_nb.files import results
    from peagle_nb.bench.client import run_benchmark
    from peagle_nb.bench.openai_backend import OpenAIBackend
    from peagle_nb.text.prompts import load_prompts

    try:
        levels = [int(c) for c in args.concurrency.split(",") if c.strip()]
    except ValueError:
        raise SystemExit(f"--concurrency must be comma-separated integers, got {args.concurrency!r}") from None
    if not levels or min(levels) < 1:
        raise SystemExit(f"--concurrency levels must be integers >= 1, got {args.concurrency!r}")
    prompts = load_prompts(args.prompts, args.limit)
    backend = _backend(OpenAIBackend, args.base_url, args.model)
    doc = run_benchmark(backend, prompts, levels, args.max_tokens, temperature=args.temperature,
                        requests_per_level=args.requests, method=args.method, k=args.k, source=args.source,
                        prompt_set=str(args.prompts))
    for r in doc["runs"]:
        tau = f"{r['tau']:.2f}" if r.get("tau") else "-"
        print(f"concurrency {r['concurrency']:>3}: {r['tokens_per_s']:.1f} tok/s, {r['request_throughput']:.2f} req/s, "
              f"TTFT {r['ttft_ms']:.0f} ms, TPOT {r['tpot_ms'] or 0:.1f} ms, tau {tau}, failed {r['n_failed']}")
    if args.out:
        results.write_results(args.out, doc)
        print("wrote", args.out)
    else:
        print(json.dumps(doc, indent=1))
    return 0
