"""The one preset table: target + draft head + K + the engine flags each is served with, and where it is
deployed on SageMaker AI. Explained in notebook 05 (serving) and notebook 06 (deployment).

The suite's tiny heads run anywhere (vLLM's CPU build included). The public heads need a GPU; their K is
the one their model cards recommend, ``trained_k`` the depth they were trained for (both from the one table in
``peagle_nb.models.public_heads``), and ``gpu_memory_gib`` the least GPU memory we would start them on
(weights + KV cache for modest concurrency at the given ``--max-model-len``). Every speculative config says
``"method": "eagle3"``: P-EAGLE is EAGLE-3's drafter run with ``"parallel_drafting": true`` (vLLM >= 0.16).

Deployment-only field: ``instance_type``, the SageMaker AI instance ``peagle_nb.sagemaker.plan`` deploys
the preset to unless told otherwise. ``peagle-nb serve`` and the SageMaker plan read the same flags, so a
preset served here and deployed there runs the same ``vllm serve`` command line.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from peagle_nb.files import paths
from peagle_nb.models.public_heads import PublicHead, public_head

# Blog flags for GPT-OSS (vLLM/AWS P-EAGLE blog): fp8 KV cache, async scheduling, large cudagraph capture.
_GPT_OSS_FLAGS = ("--kv-cache-dtype", "fp8", "--async-scheduling", "--max-cudagraph-capture-size", "4096",
                  "--no-enable-prefix-caching")
# GPT-OSS-20B at 8192 tokens of context, the length JumpStart's P-EAGLE configuration serves it with.
_GPT_OSS_20B_FLAGS = ("--max-model-len", "8192", *_GPT_OSS_FLAGS)
_GPT_OSS_120B_FLAGS = ("--max-model-len", "32768", *_GPT_OSS_FLAGS)
_QWEN_FLAGS = ("--max-model-len", "16384", "--no-enable-prefix-caching", "--async-scheduling")
# The tiny models on a CPU: no CUDA graphs, small context, fp32 (the CPU path upcasts bf16 weights anyway).
_TINY_FLAGS = ("--dtype", "float32", "--max-model-len", "1024", "--enforce-eager")

# SageMaker AI instances: the cheapest NVIDIA instance for the tiny models; 48 GiB (1 x L40S) for
# GPT-OSS-20B; 96 GiB (1 x RTX PRO 6000, JumpStart's default for these models) for the 80 GiB presets.
_TINY_INSTANCE = "ml.g5.xlarge"
_48_GIB_INSTANCE = "ml.g6e.2xlarge"
_96_GIB_INSTANCE = "ml.g7e.2xlarge"

# Serve K and trained K of the public P-EAGLE heads come from their model cards (one table); the long-context
# variants are served with the K of the short-context head of the same target.
_PEAGLE_20B = public_head("amazon/GPT-OSS-20B-P-EAGLE")
_PEAGLE_120B = public_head("amazon/gpt-oss-120b-p-eagle")
_PEAGLE_QWEN = public_head("amazon/Qwen3-Coder-30B-A3B-Instruct-P-EAGLE")


@dataclass(frozen=True)
class Preset:
    name: str
    target: str  # local folder or HF repo id
    head: str | None  # None: no speculation
    method: str  # "none" | "eagle3" | "peagle"
    k: int  # recommended num_speculative_tokens (0 for "none")
    trained_k: int | None = None
    engine_flags: tuple[str, ...] = ()
    gpu_memory_gib: int | None = None  # None: runs on a CPU
    source: str = ""  # where the recommendation comes from
    notes: str = ""
    local: bool = False  # paths inside this repository (resolved at use)
    instance_type: str = _TINY_INSTANCE  # SageMaker AI instance the deployment plan uses

    @property
    def needs_gpu(self) -> bool:
        return self.gpu_memory_gib is not None

    def target_path(self) -> str:
        return str(paths.models_dir() / self.target) if self.local else self.target

    def head_path(self) -> str | None:
        if self.head is None:
            return None
        return str(paths.models_dir() / self.head) if self.local else self.head


def _public_peagle(name: str, card: PublicHead, head: str | None = None, **fields) -> Preset:
    """A public P-EAGLE head's preset with its model card's target, serve K and trained K; ``head`` names a variant
    of the carded head (long context) served with the same K."""
    return Preset(name, card.target, head or card.repo, "peagle", card.serve_k, trained_k=card.trained_k, **fields)


PRESETS: dict[str, Preset] = {p.name: p for p in [
    # --- the suite's tiny models (data/models, trained by `peagle-nb train`) ---------------------------
    Preset("tiny-none", "tiny-target", None, "none", 0, engine_flags=_TINY_FLAGS, local=True,
           source="this suite", notes="the tiny target without speculation (baseline)"),
    Preset("tiny-eagle3", "tiny-target", "tiny-eagle3", "eagle3", 3, engine_flags=_TINY_FLAGS, local=True,
           source="this suite", notes="1-layer EAGLE-3 head: K sequential drafter passes per step"),
    Preset("tiny-peagle", "tiny-target", "tiny-peagle", "peagle", 4, engine_flags=_TINY_FLAGS, local=True,
           source="this suite", notes="P-EAGLE head: one parallel drafter pass per step"),
    # --- public P-EAGLE heads (HF model cards) ----------------------------------------------------------
    _public_peagle("gpt-oss-20b-peagle", _PEAGLE_20B, engine_flags=_GPT_OSS_20B_FLAGS, gpu_memory_gib=40,
                   instance_type=_48_GIB_INSTANCE,
                   source=f"HF card {_PEAGLE_20B.repo}; vLLM/AWS P-EAGLE blog (best K=7 at every concurrency)",
                   notes="MXFP4 target ~14 GiB of weights; 40 GiB leaves room for KV cache (H100/H200/L40S/A100-80G). "
                         "Needs the KV-cache-group fix (vLLM PR #35062/#36684), else startup fails in "
                         "validate_same_kv_cache_group."),
    _public_peagle("gpt-oss-20b-peagle-long", _PEAGLE_20B, "amazon/gpt-oss-20b-p-eagle-long-context",
                   engine_flags=_GPT_OSS_FLAGS, gpu_memory_gib=48, instance_type=_48_GIB_INSTANCE,
                   source="HF amazon/gpt-oss-20b-p-eagle-long-context (K as the short-context head)",
                   notes="long-context variant; size KV cache for the context you serve"),
    _public_peagle("gpt-oss-120b-peagle", _PEAGLE_120B, engine_flags=_GPT_OSS_120B_FLAGS, gpu_memory_gib=80,
                   instance_type=_96_GIB_INSTANCE,
                   source=f"HF card {_PEAGLE_120B.repo} (trained K={_PEAGLE_120B.trained_k}, "
                          f"serve K={_PEAGLE_120B.serve_k})",
                   notes="MXFP4 target ~61 GiB of weights: one 80 GiB GPU (H100/H200/B200)"),
    _public_peagle("gpt-oss-120b-peagle-long", _PEAGLE_120B, "amazon/gpt-oss-120b-p-eagle-long-context",
                   engine_flags=_GPT_OSS_FLAGS, gpu_memory_gib=80, instance_type=_96_GIB_INSTANCE,
                   source="HF amazon/gpt-oss-120b-p-eagle-long-context", notes="long-context variant"),
    _public_peagle("qwen3-coder-30b-peagle", _PEAGLE_QWEN, engine_flags=_QWEN_FLAGS, gpu_memory_gib=80,
                   instance_type=_96_GIB_INSTANCE,
                   source=f"HF card {_PEAGLE_QWEN.repo} (serve command: K={_PEAGLE_QWEN.serve_k}, max-model-len 16384)",
                   notes="bf16 target ~57 GiB of weights; the FP8 target (Qwen/Qwen3-Coder-30B-A3B-Instruct-FP8, the "
                         "one the head was trained on) halves that"),
    # --- EAGLE-3 baselines --------------------------------------------------------------------------------
    Preset("gpt-oss-20b-eagle3", "openai/gpt-oss-20b", "RedHatAI/gpt-oss-20b-speculator.eagle3", "eagle3", 3,
           engine_flags=_GPT_OSS_20B_FLAGS, gpu_memory_gib=40, instance_type=_48_GIB_INSTANCE,
           source="vLLM/AWS P-EAGLE blog baseline (best EAGLE-3 K=3)", notes="speculators-format EAGLE-3 head"),
    Preset("gpt-oss-120b-eagle3", "openai/gpt-oss-120b", "nvidia/gpt-oss-120b-Eagle3-long-context", "eagle3", 3,
           engine_flags=_GPT_OSS_120B_FLAGS, gpu_memory_gib=80, instance_type=_96_GIB_INSTANCE,
           source="NVIDIA EAGLE-3 head named on the amazon/*-P-EAGLE cards", notes="baseline for the 120B P-EAGLE"),
    Preset("qwen3-coder-30b-eagle3", "Qwen/Qwen3-Coder-30B-A3B-Instruct",
           "JinnP/SGLang-EAGLE3-Qwen3-Coder-30B-A3B-Instruct", "eagle3", 3, engine_flags=_QWEN_FLAGS,
           gpu_memory_gib=80, instance_type=_96_GIB_INSTANCE, source="community SpecForge EAGLE-3 head (HF)",
           notes="community baseline"),
]}


class UnknownPreset(KeyError):
    """A preset name that is not in :data:`PRESETS`; the message lists the known ones."""

    def __str__(self) -> str:  # KeyError would quote the whole message
        return str(self.args[0])


def get_preset(name: str) -> Preset:
    try:
        return PRESETS[name]
    except KeyError:
        raise UnknownPreset(f"unknown preset {name!r}; choose one of: {', '.join(PRESETS)}") from None


def local_models_ready(preset: Preset) -> bool:
    """Whether a local preset's folders exist (`peagle-nb train` writes the tiny models)."""
    if not preset.local:
        return False
    head = preset.head_path()
    return Path(preset.target_path(), "config.json").is_file() and (head is None or Path(head, "config.json").is_file())
