"""The published P-EAGLE numbers, transcribed once with their sources, and the builder of ``published.json``.

Every number below is copied from the text of a public source named beside it (figure captions and
tables of the vLLM/AWS blog, the paper's abstract, the vLLM pull request, the Hugging Face model cards);
nothing is read off a plot. ``python -m peagle_nb.lab.records.published_sources`` writes
``data/results/published.json`` from these tables, and a test checks that the committed file is exactly
what this module builds. Explained in notebook 07.

Not transcribed: the blog's Figures 1 and 4-6 also plot absolute tokens/s per method and concurrency,
but only as bars (the captions give the P-EAGLE/EAGLE-3 ratios, recorded here).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from peagle_nb.files import paths
from peagle_nb.models.public_heads import PUBLIC_PEAGLE_HEADS
from peagle_nb.files.results import SCHEMA, validate

TRANSCRIBED = "2026-12-03T00:00:00Z"

BLOG = ("vLLM blog 'P-EAGLE: Faster LLM inference with Parallel Speculative Decoding in vLLM' (2026-03-13, "
        "vllm-project/vllm-project.github.io _posts/2026-03-13-p-eagle.md; also on AWS Blogs)")
PAPER = "arXiv 2602.01469 'P-EAGLE: Parallel-Drafting EAGLE with Scalable Training', abstract"
PR = "vLLM PR #32887 (Unified Parallel Drafting), description"


def card(repo: str) -> str:
    return f"https://huggingface.co/{repo} (model card)"


# ---- the blog: GPT-OSS-20B on one B200, K swept over {3, 5, 7}, each method at its best K ----------
BLOG_SETUP = {
    "target": "openai/gpt-oss-20b", "hardware": "NVIDIA B200",
    "head": "amazon/GPT-OSS-20B-P-EAGLE", "baseline_head": "RedHatAI/gpt-oss-20b-speculator.eagle3",
    "drafting": "chain (the blog: 'Linear drafting is used for both')", "temperature": 0.0,
}
BLOG_K_SWEPT = [3, 5, 7]
BLOG_CONCURRENCY = [1, 2, 4, 8, 16, 32, 64]
# Figure captions 4-6: "The P/E speedup ratios are: 1.55x (c=1), 1.29x (c=2), ..." (P-EAGLE over EAGLE-3
# throughput in tokens/s, each at the K in {3, 5, 7} that maximises it).
BLOG_RATIOS = {
    ("MT-Bench", "Figure 4"): [1.55, 1.29, 1.35, 1.28, 1.27, 1.09, 1.05],
    ("HumanEval", "Figure 5"): [1.55, 1.53, 1.45, 1.35, 1.31, 1.37, 1.23],
    ("SPEED-Bench (Code)", "Figure 6"): [1.69, 1.61, 1.54, 1.45, 1.40, 1.22, 1.25],
}
# Tables "P-EAGLE (AL)" and "EAGLE-3 (AL)": acceptance length (bonus token included: 3.02 at K=3 > 3).
BLOG_ACCEPTANCE = {  # method -> K -> (HumanEval, SPEED-Bench (Code), MT-Bench)
    "peagle": {3: (3.02, 2.87, 2.87), 7: (3.94, 3.38, 3.70)},
    "eagle3": {3: (2.65, 2.24, 2.70), 7: (3.03, 2.59, 3.27)},
}
BLOG_ACCEPTANCE_COLUMNS = ("HumanEval", "SPEED-Bench (Code)", "MT-Bench")
BLOG_BEST_K = {  # section "vLLM Benchmarking on P-EAGLE", quoted
    "peagle": (7, "P-EAGLE achieves peak TPS at K=7 across all concurrency levels.", None),
    "eagle3": (3, "vanilla EAGLE-3 reaches its highest TPS at K=3, with its improved depth occasionally "
                  "shifting toward higher values depending on concurrency.",
               "occasionally higher at some concurrencies; the blog does not say which"),
}
BLOG_RANGE = (1.05, 1.69)  # "P-EAGLE achieves 1.05x-1.69x speedup over vanilla EAGLE-3 on GPT-OSS 20B"

# ---- the paper, the pull request and the model cards ----------------------------------------------
PAPER_RANGE = {"targets": ["openai/gpt-oss-120b", "openai/gpt-oss-20b", "Qwen/Qwen3-Coder-30B-A3B-Instruct"],
               "min": 1.10, "max": 1.36}
PR_RESULT = {"target": "openai/gpt-oss-120b", "hardware": "NVIDIA B200", "drafter_layers": 2, "k": 7,
             "concurrency": 1, "tokens_per_s": 560.0, "speedup_over_none": 1.52, "speedup_over_eagle3": 1.12}
# Serve K and trained K of each public head: the model cards' values, kept in peagle_nb.models.public_heads.
SERVING_DEFAULTS = [(h.target, h.repo, h.serve_k, h.trained_k) for h in PUBLIC_PEAGLE_HEADS.values()]
CARD_ACCEPTANCE = [  # (target, head, K, prompt set, tau)
    ("openai/gpt-oss-120b", "amazon/gpt-oss-120b-p-eagle", 5, "MT-Bench", 2.68),
    ("openai/gpt-oss-120b", "amazon/gpt-oss-120b-p-eagle", 5, "HumanEval", 3.15),
    ("openai/gpt-oss-120b", "amazon/gpt-oss-120b-p-eagle", 5, "GSM8K", 3.55),
    ("Qwen/Qwen3-Coder-30B-A3B-Instruct", "amazon/Qwen3-Coder-30B-A3B-Instruct-P-EAGLE", 4, "HumanEval", 4.30),
    ("Qwen/Qwen3-Coder-30B-A3B-Instruct", "amazon/Qwen3-Coder-30B-A3B-Instruct-P-EAGLE", 10, "HumanEval", 6.66),
    ("Qwen/Qwen3-Coder-30B-A3B-Instruct", "amazon/Qwen3-Coder-30B-A3B-Instruct-P-EAGLE", 18, "HumanEval", 7.51),
]


def blog_runs() -> list[dict]:
    runs = []
    for (workload, figure), ratios in BLOG_RATIOS.items():
        for c, ratio in zip(BLOG_CONCURRENCY, ratios, strict=True):
            runs.append({"kind": "speedup_over_eagle3", **BLOG_SETUP, "method": "peagle", "baseline_method": "eagle3",
                         "prompt_set": workload, "concurrency": c, "speedup_over_eagle3": ratio,
                         "k_swept": BLOG_K_SWEPT, "k_choice": "each method at its own best K in k_swept",
                         "source_ref": f"{BLOG}, {figure} caption ({workload} throughput, P/E speedup ratios)"})
    for method, by_k in BLOG_ACCEPTANCE.items():
        table = "P-EAGLE (AL)" if method == "peagle" else "EAGLE-3 (AL)"
        head = BLOG_SETUP["head"] if method == "peagle" else BLOG_SETUP["baseline_head"]
        for k, values in by_k.items():
            for workload, tau in zip(BLOG_ACCEPTANCE_COLUMNS, values, strict=True):
                runs.append({"kind": "acceptance", **BLOG_SETUP, "head": head, "method": method, "k": k,
                             "prompt_set": workload, "tau": tau,
                             "source_ref": f"{BLOG}, acceptance-length table '{table}', row K={k}"})
    for method, (k, quote, caveat) in BLOG_BEST_K.items():
        rec = {"kind": "best_k", **BLOG_SETUP, "method": method, "k": k, "k_swept": BLOG_K_SWEPT,
               "concurrencies": BLOG_CONCURRENCY, "prompt_sets": [w for w, _ in BLOG_RATIOS], "quote": quote}
        if caveat:
            rec["caveat"] = caveat
        rec["source_ref"] = f"{BLOG}, section 'vLLM Benchmarking on P-EAGLE'"
        runs.append(rec)
    runs.append({"kind": "speedup_over_eagle3_range", **BLOG_SETUP, "method": "peagle", "baseline_method": "eagle3",
                 "speedup_over_eagle3_min": BLOG_RANGE[0], "speedup_over_eagle3_max": BLOG_RANGE[1],
                 "source_ref": f"{BLOG}, section 'Our Approach: Parallel-EAGLE (P-EAGLE)'"})
    return runs


def other_runs() -> list[dict]:
    runs = [{"kind": "speedup_over_eagle3_range", "targets": PAPER_RANGE["targets"], "method": "peagle",
             "baseline_method": "eagle3", "speedup_over_eagle3_min": PAPER_RANGE["min"],
             "speedup_over_eagle3_max": PAPER_RANGE["max"], "source_ref": PAPER},
            {"kind": "speedup", "method": "peagle", "batch_size": PR_RESULT["concurrency"], **PR_RESULT,
             "source_ref": f"{PR}: 2-layer P-EAGLE, GPT-OSS-120B, B200, batch 1, K=7"}]
    for target, head, k, trained_k in SERVING_DEFAULTS:
        runs.append({"kind": "serving_default", "target": target, "head": head, "method": "peagle", "k": k,
                     "trained_k": trained_k, "source_ref": card(head)})
    for target, head, k, workload, tau in CARD_ACCEPTANCE:
        runs.append({"kind": "acceptance", "target": target, "head": head, "method": "peagle", "k": k,
                     "prompt_set": workload, "tau": tau, "source_ref": f"{card(head)}: acceptance length at K={k}"})
    return runs


def build_published() -> dict:
    """The ``published.json`` document (schema of ``peagle_nb/files/results.py``)."""
    doc = {
        "schema": SCHEMA, "source": "published", "created": TRANSCRIBED,
        "machine": {"device": "published (see each record's hardware)"},
        "notes": ("Published numbers for P-EAGLE vs EAGLE-3, transcribed from the text of the sources named in "
                  "each record's source_ref by peagle_nb/lab/records/published_sources.py; not measured by this "
                  "suite. tau = acceptance length, bonus token included (vLLM's convention). The blog's "
                  "Figures 1 and 4-6 also plot absolute tokens/s, drawn as bars only: not transcribed."),
        "runs": blog_runs() + other_runs(),
    }
    return validate(doc, "published.json")


def dumps(doc: dict) -> str:
    return json.dumps(doc, indent=1) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m peagle_nb.lab.records.published_sources",
                                description="write data/results/published.json from the transcription tables")
    p.add_argument("--out", type=Path, default=paths.results_dir() / "published.json")
    args = p.parse_args(argv)
    args.out.write_text(dumps(build_published()), encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
