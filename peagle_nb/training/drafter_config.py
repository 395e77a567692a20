"""The options of one draft-head training run (``peagle-nb train eagle3|peagle``). Explained in notebooks 02, 03."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from peagle_nb.training.drafter_data import DEFAULT_GREEDY_FRACTION, DEFAULT_SAMPLE_TEMPERATURE


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
    greedy_fraction: float = DEFAULT_GREEDY_FRACTION  # 0: every continuation sampled (drafter_data explains why)
    sample_temperature: float = DEFAULT_SAMPLE_TEMPERATURE
    exclude_domains: tuple[str, ...] = ()  # train without these corpus domains (the domain-shift experiment)
    corpus: str = "v1"  # where the prompts come from: "v1" (committed) or "v3" (data/corpus/v3, family v3)
    mask_hidden: str = "learned"  # P-EAGLE: "learned" or "zeros" (held at zero: the ablation of notebook 03)
    gen_batch: int | None = None  # sequences generated at once (default: 4096 on CUDA, 64 on CPU)
    generator: str | None = None  # "lean" (static cache, CUDA graphs) or "transformers"; default lean on CUDA
    data_cache: Path | None = None
    prompts_file: Path | None = None  # the prompts drawn beforehand (``training.prompt_file``), instead of the corpus
    lockstep: Path | None = None  # a folder shared with the pair's other trainer: equal steps (``training.lockstep``)
    teacher_tf32: bool = False  # the teacher's fp32 products in TF32 (CUDA): ~30 % off its pass, soft labels ~3e-3 away
    init_from: Path | None = None  # continue training this exported head (same shapes)
    val_prompts: int = 0  # per domain: new corpus-train prompts measured after training (0: none)
    eval_prompts: int | None = None  # per held-out set; None = all
    eval_max_new_tokens: int = 128
    eval_k_max: int = 8
    device: str = "auto"
    seed: int = 0
    smoke: bool = False
    log_every: int = 100

    def validate(self) -> None:
        """Clear errors for options that would fail deep inside a run (after minutes of data generation)."""
        problems = []
        counts = {"--steps": self.steps, "--batch-size": self.batch_size, "--n-sequences": self.n_sequences,
                  "--k": self.k, "--draft-vocab-size": self.draft_vocab_size,
                  "--eval-max-new-tokens": self.eval_max_new_tokens}
        problems += [f"{flag} {value} must be >= 1" for flag, value in counts.items() if value < 1]
        if self.gen_batch is not None and self.gen_batch < 1:
            problems.append(f"--gen-batch {self.gen_batch} must be >= 1 (or left out: 4096 on CUDA, 64 on a CPU)")
        if self.seq_len <= max(self.prompt_lengths):
            problems.append(f"--seq-len {self.seq_len} must exceed the longest prompt ({max(self.prompt_lengths)} "
                            f"tokens): the target continues each prompt")
        if self.lr <= 0 or (self.time_budget_s is not None and self.time_budget_s <= 0):
            problems.append("--lr and --time-budget-s must be > 0")
        if not 0.0 <= self.greedy_fraction <= 1.0:
            problems.append(f"--greedy-fraction {self.greedy_fraction} must be in [0, 1]")
        if not (0.0 < self.cod_r <= 1.0 and 0.0 < self.cod_r_min <= 1.0):
            problems.append(f"--cod-r {self.cod_r} and --cod-r-min {self.cod_r_min} must be in (0, 1]")
        if self.generator not in (None, "lean", "transformers"):
            problems.append(f"--generator {self.generator}: use lean or transformers")
        if self.corpus not in ("v1", "v3"):
            problems.append(f"--corpus {self.corpus}: use v1 or v3")
        if self.mask_hidden not in ("learned", "zeros") or (self.mask_hidden == "zeros" and self.kind != "peagle"):
            problems.append(f"--mask-hidden {self.mask_hidden}: learned or zeros, and zeros only for a P-EAGLE head")
        if self.prompts_file is not None and not Path(self.prompts_file).is_file():
            problems.append(f"--prompts {self.prompts_file} is not a file: write it with `python -m "
                            f"peagle_nb.lab.training_runs.family_v3 prompts --out FILE`, or leave --prompts out")
        if self.init_from is not None and not (Path(self.init_from) / "config.json").is_file():
            problems.append(f"--init-from {self.init_from} is not a head folder (no config.json); pass the --out "
                            f"folder of an earlier run")
        if self.val_prompts:  # measured after training: a missing corpus would end the run then, its work lost
            from peagle_nb.text.corpus import missing_files

            if missing := missing_files():
                problems.append(f"--val-prompts {self.val_prompts} cuts prompts from the committed corpus's "
                                f"validation documents, but {', '.join(map(str, missing))} is missing: restore it "
                                f"(`git checkout data/corpus`) or pass --val-prompts 0")
        if problems:
            raise ValueError("bad drafter training options: " + "; ".join(problems) + ".")

    @classmethod
    def smoke_config(cls, kind: str, out: Path, **overrides) -> DrafterTrainConfig:
        base = dict(kind=kind, out=out, steps=15, batch_size=8, lr=3e-3, warmup_steps=3, n_sequences=16,
                    seq_len=64, prompt_lengths=(12, 16), draft_vocab_size=256, eval_prompts=1,
                    eval_max_new_tokens=16, smoke=True, log_every=5, k=4 if kind == "peagle" else 3)
        base.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**base)
