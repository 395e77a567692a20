"""The notebook series: one entry per ``notebooks/NN_slug.ipynb``.

The README's notebook table, the files in ``notebooks/`` and this list must agree (checked by
tests/test_notebook_hygiene.py). ``full_needs`` says what the full configuration needs beyond a CPU;
every notebook also runs in smoke mode on a 2-core CPU with no GPU and no internet.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class NotebookSpec:
    number: str  # "00"
    slug: str  # "setup_and_environment_check"
    teaches: str
    full_needs: tuple[str, ...] = ()  # "gpu", "vllm", "vllm_gpu", "aws", "sagemaker_sdk"
    timeout_s: int = 900  # smoke-mode budget on a 2-core CPU, whole notebook

    @property
    def filename(self) -> str:
        return f"{self.number}_{self.slug}.ipynb"


SERIES: tuple[NotebookSpec, ...] = (
    NotebookSpec("00", "setup_and_environment_check",
                 "What this machine can run, the series and its smoke/full modes, record() and gates.",
                 (), 300),
    NotebookSpec("01", "speculative_decoding_basics",
                 "Draft then verify with the tiny target: acceptance length, why verification is lossless "
                 "(greedy outputs compared, rejection-sampling histogram vs the target distribution).",
                 (), 240),
    NotebookSpec("02", "eagle3_autoregressive_drafter",
                 "EAGLE-3: three feature layers, fc, the fused first layer, the draft vocabulary, K sequential "
                 "passes; per-position acceptance and drafting cost growing with K.",
                 (), 240),
    NotebookSpec("03", "peagle_mask_token_drafter",
                 "P-EAGLE: <mask> token + shared mask_hidden, the K-slot input, one pass, the COD training mask, "
                 "acceptance vs EAGLE-3, cost flat in K, ablation of the learned placeholders.",
                 (), 300),
    NotebookSpec("04", "triton_kernels_for_parallel_drafting",
                 "The drafter's batch metadata on the critical path; fused Triton kernels (greedy verification, "
                 "parallel-draft inputs with paged-KV slot mapping, hidden-state expansion) beside their PyTorch "
                 "references; H200 time per call vs eager ops and the launch floor, bandwidth vs a copy.",
                 ("gpu",), 240),
    NotebookSpec("05", "serve_peagle_in_vllm",
                 "Serve a P-EAGLE head in real vLLM: the head checkpoint, the speculative config field by field, "
                 "offline generation (lossless, one drafter pass per step), the OpenAI-compatible server, "
                 "acceptance from /metrics, a concurrency benchmark; GPT-OSS-20B + amazon/GPT-OSS-20B-P-EAGLE on a GPU.",
                 ("vllm",), 480),
    NotebookSpec("06", "deploy_to_sagemaker_ai",
                 "Deploy P-EAGLE to a SageMaker AI endpoint: plan, container contract, deploy/invoke/benchmark, "
                 "cleanup that always runs; local emulation with real vLLM.",
                 ("aws", "sagemaker_sdk"), 420),
    NotebookSpec("07", "compare_peagle_vs_eagle3",
                 "P-EAGLE vs EAGLE-3: step-time model, best-K advisor, interactive dashboard, what changes the answer.",
                 (), 180),
    NotebookSpec("08", "japanese_and_domain_shift",
                 "Does P-EAGLE draft well in Japanese? Tokens per character per language, acceptance per domain "
                 "(greedy and sampled at T=1 over seeds, with repetition fractions and fresh/repeated steps), "
                 "a head trained without Japanese vs one trained with it; GPT-OSS-20B's P-EAGLE head on a GPU.",
                 (), 420),
)


def by_number(number: str) -> NotebookSpec:
    for spec in SERIES:
        if spec.number == number:
            return spec
    raise KeyError(f"no notebook numbered {number!r}; known: {', '.join(s.number for s in SERIES)}")
