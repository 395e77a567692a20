"""The options of one draft-head training run (``peagle-nb train eagle3|peagle``). Explained in notebooks 02, 03."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass
class DrafterTrainConfig:
    kind: str  # "eagle3" | "peagle"
    out: Path
    target: Path | None = None  # default data/models/tiny-target
    num_layers: int | None = None  # eagle3: 1; peagle: 4
    intermediate_size: int | None = None  # MLP width (default: the target's)
    k: int = 8  # peagle: deepest trained draft slot; eagle3: TTT unroll steps (k = 0..6 -> 7)
    cod_r: float = 0.7
    cod_r_min: float = 0.2
    ttt_decay: float = 0.8
    draft_vocab_size: int = 2048
    steps: int = 3000
    time_budget_s: float | None = None
    batch_size: int = 64
    lr: float = 2e-3
    min_lr_frac: float = 0.05
    warmup_steps: int = 100
    weight_decay: float = 0.0
    grad_clip: float = 1.0
    n_sequences: int = 4096
    seq_len: int = 256
    prompt_lengths: tuple[int, ...] = (16, 24, 32, 40, 48)
    greedy_fraction: float = 1.0  # greedy continuations: the labels a greedy-evaluated drafter needs at depth
    gen_batch: int | None = None  # sequences generated at once (default: 4096 on CUDA, 64 on CPU)
    data_cache: Path | None = None
    init_from: Path | None = None  # continue training this exported head (same shapes)
    val_prompts: int = 0  # per domain: new corpus-train prompts measured after training (0: none)
    eval_prompts: int | None = None  # per held-out set; None = all
    eval_max_new_tokens: int = 128
    eval_k_max: int = 8
    device: str = "auto"
    seed: int = 0
    smoke: bool = False
    log_every: int = 100

    @classmethod
    def smoke_config(cls, kind: str, out: Path, **overrides) -> DrafterTrainConfig:
        base = dict(kind=kind, out=out, steps=15, batch_size=8, lr=3e-3, warmup_steps=3, n_sequences=16,
                    seq_len=64, prompt_lengths=(12, 16), draft_vocab_size=256, eval_prompts=1,
                    eval_max_new_tokens=16, smoke=True, log_every=5, k=4 if kind == "peagle" else 3)
        base.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**base)
