"""The notebook series: one entry per ``notebooks/NN_slug.ipynb``.

The README's notebook table, the files in ``notebooks/`` and this list must agree (checked by
tests/test_notebook_hygiene.py). ``full_needs`` says what the full configuration needs beyond a CPU,
``full_cost`` what it costs (also said on each notebook's first screen) and ``full_on_cpu`` whether it is
short enough to be the default on any CPU (:mod:`peagle_nb.notebook.modes`); every notebook also runs in
smoke mode on a 2-core CPU with no GPU and no internet.
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
    full_cost: str = ""  # what full mode does beyond smoke mode, in words
    full_on_cpu: bool = False  # full mode is short on any CPU: the default wherever it can run

    @property
    def filename(self) -> str:
        return f"{self.number}_{self.slug}.ipynb"


SERIES: tuple[NotebookSpec, ...] = (
    NotebookSpec("00", "setup_and_environment_check",
                 "What this machine can run, the series and its smoke/full modes, record() and gates; verifying K+1 "
                 "tokens costs about one decoding step (measured here and on an H200), and why.",
                 (), 300, "30 timed repeats per row count instead of 10 (seconds)", True),
    NotebookSpec("01", "speculative_decoding_basics",
                 "Draft then verify with the tiny target: a real step that keeps four drafts, acceptance length, why "
                 "verification is lossless (greedy outputs compared, rejection-sampling histogram vs the target "
                 "distribution), loops and acceptance that measures drafting (sampled over seeds, fresh vs repeated), "
                 "speed on this CPU and where a step's time goes, beside the H200.",
                 (), 240, "16 prompts x 64 tokens per set instead of 4 x 48, K = 1, 3, 5, 7 with 5 timed rounds "
                 "instead of K = 3, 7 with 3 in the speed comparison (several minutes on a 2-core CPU), and 50,000 "
                 "sampling draws instead of 20,000"),
    NotebookSpec("02", "eagle3_autoregressive_drafter",
                 "EAGLE-3: three feature layers, fc, the fused first layer, the draft vocabulary, K sequential "
                 "passes; per-position acceptance and drafting cost growing with K.",
                 (), 240, "16 prompts x 64 tokens per set instead of 2 x 24 (about 20x the decoding) and 30 timing "
                 "repeats per K instead of 5"),
    NotebookSpec("03", "peagle_mask_token_drafter",
                 "P-EAGLE: <mask> token + shared mask_hidden, a real step's 2K-row drafter batch and ParallelDrafter, "
                 "one pass, the COD training mask and a head trained in the notebook, acceptance vs EAGLE-3 on fresh "
                 "and repeated text, cost vs K and step timelines from the lean engine's phases, ablation of the "
                 "learned placeholders, each method at its best K with its spread.",
                 (), 300, "16 prompts x 64 tokens per set instead of 2 x 24 (about 20x the decoding; the ablation and "
                 "the fresh/repeated split grow alike), 30 timing repeats per K instead of 5, and a 200-step "
                 "training run on 256 sequences instead of 15 steps on 16 (tens of minutes on a CPU)"),
    NotebookSpec("04", "triton_kernels_for_parallel_drafting",
                 "The drafter's batch metadata on the critical path; fused Triton kernels (greedy verification, "
                 "parallel-draft inputs with paged-KV slot mapping, hidden-state expansion) beside their PyTorch "
                 "references; the builder's share of a real decoding step (fused vs eager); H200 time per call vs "
                 "eager ops and the launch floor, bandwidth vs a copy.",
                 ("gpu",), 240, "20 random batches per kernel instead of 3 (slow under the Triton interpreter on a "
                 "CPU), 10 repeats of the step timings per builder instead of 5 and, on a GPU, the live benchmark "
                 "(about a minute)"),
    NotebookSpec("05", "serve_peagle_in_vllm",
                 "Serve a P-EAGLE head in real vLLM: the head checkpoint, the speculative config field by field, "
                 "offline generation (lossless, one drafter pass per step), the OpenAI-compatible server, "
                 "acceptance from /metrics, a concurrency benchmark; GPT-OSS-20B + amazon/GPT-OSS-20B-P-EAGLE "
                 "on a GPU.",
                 ("vllm",), 480, "6 prompts x 48 tokens instead of 2 x 16 (9x the generated tokens) through real vLLM "
                 "and concurrency 1 and 4 instead of 1 and 2"),
    NotebookSpec("06", "deploy_to_sagemaker_ai",
                 "Deploy P-EAGLE to a SageMaker AI endpoint: plan, container contract, deploy/invoke/benchmark, "
                 "cleanup that always runs; local emulation with real vLLM.",
                 ("aws", "sagemaker_sdk"), 720, "16 prompts x 64 tokens instead of 4 x 16 (16x the generated "
                 "tokens) and concurrency 1 and 4; with MODE = \"aws\" a GPU endpoint billed by the hour"),
    NotebookSpec("07", "compare_peagle_vs_eagle3",
                 "P-EAGLE vs EAGLE-3: step-time model, best-K advisor, interactive dashboard, what changes the answer.",
                 (), 180, "the advisor at concurrency 1, 2, 4 and 8 instead of 1 and 2 (seconds)", True),
    NotebookSpec("08", "japanese_and_domain_shift",
                 "Does P-EAGLE draft well in Japanese? Tokens per character per language, acceptance per domain "
                 "(greedy and sampled at T=1 over seeds, with repetition fractions and fresh/repeated steps), "
                 "a head trained without Japanese vs one trained with it; GPT-OSS-20B's P-EAGLE head on a GPU.",
                 ("gpu",), 420, "16 prompts x 96 tokens per language instead of 1 x 16, and two P-EAGLE heads "
                 "trained for 200 steps on 768 sequences instead of 16 on 24 (tens of minutes on a CPU)"),
)
