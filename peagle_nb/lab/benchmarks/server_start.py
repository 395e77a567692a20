"""How long a vLLM server takes to answer ``/health`` on this CPU, with and without a worker process (notebook 05).

vLLM's CPU platform runs the model in a worker process under the engine core (its multiprocess executor) unless
``VLLM_ENABLE_V1_MULTIPROCESSING=0``; ``peagle_nb.serving.server`` sets that for the CPU build
(``CPU_BUILD_SERVER_DEFAULTS``). This measures both, alternating their order per repeat, the tiny target with the
tiny P-EAGLE head at K=4 (what notebooks 05 and 06 serve), and checks that each serves the same greedy tokens
with the same drafts. A third mode starts two such servers at once, as notebook 06 starts its baselines
(``peagle_nb.sagemaker.local.start_local_endpoints``): their wall time until both answer. One start before the
recorded ones warms the disk cache (the first start after a while reads vLLM's files from disk).

``python -m peagle_nb.lab.benchmarks.server_start --out data/results/server_start_cpu.json``
"""

from __future__ import annotations

import argparse
import json
import statistics
import threading
import time
import urllib.request

from peagle_nb.files import paths

K = 4
MAX_TOKENS = 32
PROMPT = "def main():"
MODES = {  # name -> VLLM_ENABLE_V1_MULTIPROCESSING, servers started at once
    "worker_process": ("1", 1),  # vLLM's default: API server, engine core, worker
    "engine_core_runs_model": ("0", 1),  # the suite's default on the CPU build
    "two_at_once": ("0", 2),
}


def server_args(models=None) -> list[str]:
    from peagle_nb.serving.config import speculative_config

    models = models or paths.models_dir()
    spec = speculative_config(str(models / "tiny-peagle"), K, parallel_drafting=True)
    return ["--model", str(models / "tiny-target"), "--dtype", "float32", "--max-model-len", "1024",
            "--enforce-eager", "--speculative-config", json.dumps(spec)]


def _greedy(server) -> dict:
    """One greedy request (``MAX_TOKENS`` tokens, ``ignore_eos``) and the drafts it took, from ``/metrics``."""
    from peagle_nb.serving.metrics import read_spec_decode_metrics

    body = {"model": server.model, "prompt": PROMPT, "max_tokens": MAX_TOKENS, "temperature": 0.0,
            "ignore_eos": True}
    req = urllib.request.Request(server.openai_base_url + "/completions",  # noqa: S310 - a local server
                                 data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=120) as resp:  # noqa: S310 - a local server
        text = json.loads(resp.read())["choices"][0]["text"]
    m = read_spec_decode_metrics(server.base_url)
    return {"text": text, "num_drafts": m["num_drafts"], "num_accepted_tokens": m["num_accepted_tokens"]}


def measure_mode(mode: str, repeat: int, args: list[str]) -> dict:
    """Start the mode's server(s) from nothing, time until every one answers /health, serve one request each."""
    from peagle_nb.serving.server import ManagedVllmServer

    flag, n = MODES[mode]
    servers = [ManagedVllmServer(args, env={"VLLM_ENABLE_V1_MULTIPROCESSING": flag}) for _ in range(n)]
    errors: list[BaseException] = []

    def start(srv):
        try:
            srv.start()
        except BaseException as exc:  # noqa: BLE001 - raised below, after every server is stopped
            errors.append(exc)

    t0 = time.monotonic()
    threads = [threading.Thread(target=start, args=(s,)) for s in servers]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        wall = time.monotonic() - t0
        if errors:
            raise errors[0]
        served = [_greedy(s) for s in servers]
        n_processes = [len(s.process_tree()) for s in servers]
    finally:
        for s in servers:
            s.stop()
    return {"method": "peagle", "k": K, "measures": "server start", "mode": mode, "repeat": repeat,
            "multiprocessing": flag, "servers": n, "wall_s": wall, "startup_s": [s.startup_s for s in servers],
            "n_processes": n_processes, "served": served}


def summarize(runs: list[dict]) -> dict:
    """Per mode: median / p10 / p90 of the wall time over repeats; the ratio of the medians to vLLM's default; a
    verdict ("faster" only when the mode's slowest repeat beats the default's fastest, else "tie")."""
    out = {}
    for mode in MODES:
        walls = sorted(r["wall_s"] for r in runs if r["mode"] == mode)
        if not walls:
            continue
        q = statistics.quantiles(walls, n=10, method="inclusive") if len(walls) > 1 else [walls[0]] * 9
        out[mode] = {"repeats": len(walls), "wall_s_median": statistics.median(walls), "wall_s_p10": q[0],
                     "wall_s_p90": q[-1], "wall_s_min": walls[0], "wall_s_max": walls[-1]}
    base = out.get("worker_process")
    for mode, s in out.items():
        if base and mode != "worker_process":
            s["over_worker_process"] = s["wall_s_median"] / base["wall_s_median"]
            s["verdict"] = ("faster" if s["wall_s_max"] < base["wall_s_min"] else
                            "slower" if s["wall_s_min"] > base["wall_s_max"] else "tie")
    return out


def run(repeats: int = 3, models=None) -> dict:
    from peagle_nb.files.results import make_results

    args = server_args(models)
    measure_mode("engine_core_runs_model", -1, args)  # not recorded: the first start after a while reads from disk
    runs = []
    for r in range(repeats):
        order = list(MODES) if r % 2 == 0 else list(reversed(MODES))  # no mode always first (a warmer disk cache)
        for mode in order:
            runs.append(measure_mode(mode, r, args))
            print(f"repeat {r} {mode}: {runs[-1]['wall_s']:.1f} s, processes {runs[-1]['n_processes']}", flush=True)
    doc = make_results("vllm", runs, model={"target": "tiny-target", "head": "tiny-peagle", "k": K,
                                            "max_tokens": MAX_TOKENS, "prompt": PROMPT},
                       notes="wall time from launch until every server of the mode answers /health; one greedy "
                             "request per server afterwards (same tokens and drafts in every mode is the check)")
    doc["summary"] = summarize(runs)
    return doc


def main(argv: list[str] | None = None) -> int:
    from peagle_nb.files.results import write_results

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", required=True)
    a = parser.parse_args(argv)
    doc = run(a.repeats)
    write_results(a.out, doc)
    for mode, s in doc["summary"].items():
        print(f"{mode}: median {s['wall_s_median']:.1f} s [{s['wall_s_p10']:.1f}-{s['wall_s_p90']:.1f}]"
              + (f", {s['over_worker_process']:.2f}x vLLM's default: {s['verdict']}" if "verdict" in s else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
