"""Records what a real vLLM server shows about speculative decoding, for the offline observability tests.

Serves the tiny P-EAGLE preset and the tiny target without speculation through the local container
emulation (real vLLM, CPU build), sends requests for a few stats intervals, waits for the last stats line,
then writes beside this file:

- ``vllm_cpu_peagle.log`` / ``vllm_cpu_none.log``: the server's periodic statistics lines (the lines a
  SageMaker endpoint's CloudWatch log group receives from the container; start-up lines with local paths
  are left out);
- ``vllm_cpu_peagle_metrics.txt``: the spec-decode and generation-token families of ``/metrics`` read after
  the last stats line, so the log lines and the counters cover the same requests;
- ``recording.json``: vLLM version, presets, K and the request schedule.

Run from the repository root: ``python tests/sagemaker/data/record_vllm_observability.py`` (~3 min on 2 cores).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
PROMPTS = ["def fibonacci(n):", "import os\n", "class Stack:", "for i in range(10):", "The quick brown fox"]
STATS_LINE_LOGGERS = ("[loggers.py:", "[metrics.py:")
MAX_TOKENS = 24
ROUNDS = 4
STATS_INTERVAL_S = 10  # vLLM's default VLLM_LOG_STATS_INTERVAL


def stats_lines(log_lines: list[str]) -> list[str]:
    return [line for line in log_lines if any(tag in line for tag in STATS_LINE_LOGGERS)]


def metrics_families(text: str, prefixes=("vllm:spec_decode_", "vllm:generation_tokens")) -> str:
    keep = []
    for line in text.splitlines():
        name = line.split(" ", 3)[2] if line.startswith("# ") and len(line.split(" ")) > 2 else line
        if any(name.startswith(p) for p in prefixes):
            keep.append(line)
    return "\n".join(keep) + "\n"


def record(preset: str) -> tuple[list[str], str]:
    from peagle_nb.sagemaker.local import LocalEndpoint
    from peagle_nb.sagemaker.plan import build_plan
    from peagle_nb.serving.metrics import fetch_metrics_text

    with LocalEndpoint(build_plan(preset), startup_timeout_s=600) as ep:
        backend = ep.backend()
        for r in range(ROUNDS):  # spread over more than one stats interval
            for prompt in PROMPTS:
                backend.invoke(prompt, MAX_TOKENS)
            if r < ROUNDS - 1:
                time.sleep(STATS_INTERVAL_S / 2)
        time.sleep(STATS_INTERVAL_S + 3)  # the last interval's line
        metrics = fetch_metrics_text(ep.base_url)
    return stats_lines(ep.log_lines()), metrics


def main() -> None:
    import vllm

    from peagle_nb.serving.presets import get_preset

    for preset, stem in (("tiny-peagle", "peagle"), ("tiny-none", "none")):
        lines, metrics = record(preset)
        (HERE / f"vllm_cpu_{stem}.log").write_text("\n".join(lines) + "\n", encoding="utf-8")
        if stem == "peagle":
            (HERE / "vllm_cpu_peagle_metrics.txt").write_text(metrics_families(metrics), encoding="utf-8")
    meta = {"generator": "tests/sagemaker/data/record_vllm_observability.py", "vllm_version": vllm.__version__,
            "presets": {"peagle": "tiny-peagle", "none": "tiny-none"}, "k": get_preset("tiny-peagle").k,
            "prompts": PROMPTS, "max_tokens": MAX_TOKENS, "rounds": ROUNDS, "ignore_eos": True,
            "recorded": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    (HERE / "recording.json").write_text(json.dumps(meta, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
