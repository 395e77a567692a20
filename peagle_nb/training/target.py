"""Train the tiny target LM (``peagle-nb train target``) on the prose + code + Japanese corpus. Explained in
notebooks 01 and 08.

Steps: train a byte-level BPE on the train split and measure it on the validation split (bytes per token,
tokens per character, a vocabulary-size sweep, draft-vocabulary coverage; ``target_eval.tokenizer_report``);
pack each domain's train documents into one token stream (``<|endoftext|>`` between documents); sample random
windows from the domains (in proportion to their size); AdamW with warmup + cosine decay, bf16 autocast on
CUDA. Every ``eval_every`` steps the VALIDATION loss is measured per domain; the checkpoint with the lowest
mean validation loss is kept (the corpus is small, so late steps overfit). The kept model is saved (bf16,
sharded above 10 MB), reloaded in fp32 and measured on the HELD-OUT split window by window; the log keeps
every window's loss, so the reported perplexity can be recomputed from the committed model
(``tests/test_target.py``). Writes the model folder, ``training_log.json`` and the model card ``README.md``.
``--eval-only`` re-measures a saved model and rewrites its log's evaluation and its card.
"""

from __future__ import annotations

import argparse
import copy
import json
import platform
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch
import torch.nn.functional as F

from peagle_nb.files import paths
from peagle_nb.models.target import DEFAULT_ARCH, V3_LAYERS, aux_layer_ids, load_target, make_config, save_target
from peagle_nb.text.corpus import DOMAINS, load_documents
from peagle_nb.models.tokenizer import DEFAULT_VOCAB_SIZE, train_tokenizer
from peagle_nb.training.runtime import resolve_device
from peagle_nb.training.schedule import lr_at
from peagle_nb.training.target_card import model_card
from peagle_nb.training.target_eval import (evaluate_split, greedy_samples, heldout_loss, token_stream,
                                            tokenizer_report)

__all__ = ["TargetTrainConfig", "heldout_loss", "token_stream", "train_target", "reevaluate_target"]

V3_ARCH = dict(DEFAULT_ARCH, num_hidden_layers=V3_LAYERS)  # family v3: the tiny target's width, 32 layers
CORPORA = ("v1", "v3")

# 8 layers even in smoke mode so EAGLE-3's feature layers (2, 4, 5) stay distinct; head_dim 32 (vLLM CPU needs >= 32)
SMOKE_ARCH = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=8, num_attention_heads=2,
                  num_key_value_heads=2, max_position_embeddings=256)


@dataclass
class TargetTrainConfig:
    out: Path
    steps: int = 4000               # upper bound; a time budget may stop earlier
    time_budget_s: float | None = None
    batch_size: int = 64
    seq_len: int = 512
    lr: float = 2e-3
    min_lr_frac: float = 0.1
    warmup_steps: int = 100
    weight_decay: float = 0.1
    grad_clip: float = 1.0
    eval_every: int = 200
    eval_windows: int | None = None  # per domain and split; None = the whole validation / held-out split
    vocab_size: int = DEFAULT_VOCAB_SIZE
    vocab_sweep: tuple[int, ...] = (4096, 6144, 8192)  # tokenizer sizes measured on validation (log + card)
    draft_vocab_sizes: tuple[int, ...] = (1024, 2048, 3072, 4096)  # draft vocabularies whose coverage is measured
    domains: tuple[str, ...] = DOMAINS
    arch: dict = field(default_factory=lambda: dict(DEFAULT_ARCH))
    max_chars_per_domain: int | None = None  # smoke: train on a prefix of the corpus
    device: str = "auto"
    seed: int = 0
    smoke: bool = False
    n_samples: int = 2  # greedy samples per domain in the model card
    corpus: str = "v1"  # "v3": data/corpus/v3 shards (peagle_nb.text.corpus_v3), measured on v1's held-out split too
    tokenizer_from: Path | None = None  # a model folder whose tokenizer is reused instead of training one
    mix_alpha: float = 1.0  # domain sampling probability ~ train tokens ** mix_alpha (< 1 lifts small domains)
    heldout_windows: int | None = None  # v3's own held-out split: windows per domain (None: all)

    def validate(self) -> None:
        """Clear errors for settings that would fail deep inside training."""
        problems = []
        if self.steps < 1 or self.batch_size < 1 or self.eval_every < 1:
            problems.append("--steps, --batch-size and --eval-every must be >= 1")
        if not 8 <= self.seq_len <= self.arch["max_position_embeddings"]:
            problems.append(f"--seq-len {self.seq_len} must be in 8..{self.arch['max_position_embeddings']} "
                            f"(the model's max positions)")
        if self.lr <= 0 or (self.time_budget_s is not None and self.time_budget_s <= 0):
            problems.append("--lr and --time-budget-s must be > 0")
        if self.corpus not in CORPORA:
            problems.append(f"--corpus {self.corpus}: use one of {', '.join(CORPORA)}")
        if not 0 < self.mix_alpha <= 1:
            problems.append("--mix-alpha must be in (0, 1]")
        if self.tokenizer_from is not None and not (Path(self.tokenizer_from) / "tokenizer.json").is_file():
            problems.append(f"--tokenizer-from {self.tokenizer_from} has no tokenizer.json (give a model folder)")
        unknown = [d for d in self.domains if d not in DOMAINS]
        if unknown or not self.domains:
            problems.append(f"--domains {' '.join(self.domains)}: use some of {', '.join(DOMAINS)}")
        if problems:
            raise ValueError("bad target training settings: " + "; ".join(problems))

    @classmethod
    def smoke_config(cls, out: Path, **overrides) -> TargetTrainConfig:
        base = dict(out=out, steps=60, batch_size=8, seq_len=64, lr=3e-3, warmup_steps=5, eval_every=30,
                    eval_windows=8, vocab_size=512, vocab_sweep=(384, 512), draft_vocab_sizes=(128, 256),
                    arch=dict(SMOKE_ARCH), max_chars_per_domain=150_000, smoke=True, n_samples=1)
        base.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**base)


def _device_name(device: torch.device) -> str:
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    return f"CPU ({platform.processor() or platform.machine()})"


def _versions() -> dict:
    return {"torch": torch.__version__, "transformers": __import__("transformers").__version__,
            "python": platform.python_version()}


def _limit(docs: list[str], max_chars: int | None) -> list[str]:
    if max_chars is None:
        return docs
    out, total = [], 0
    for d in docs:
        out.append(d[: max_chars - total])
        total += len(out[-1])
        if total >= max_chars:
            break
    return out


def sample_batch(streams: list[torch.Tensor], probs: torch.Tensor, batch: int, seq_len: int,
                 gen: torch.Generator) -> torch.Tensor:
    """``batch`` random windows of ``seq_len + 1`` tokens, each from a domain drawn with ``probs``."""
    dom = torch.multinomial(probs, batch, replacement=True, generator=gen)
    rows = []
    for d in dom.tolist():
        s = streams[d]
        start = int(torch.randint(0, len(s) - seq_len - 1, (1,), generator=gen))
        rows.append(s[start: start + seq_len + 1])
    return torch.stack(rows)


def lm_loss(model, window: torch.Tensor) -> torch.Tensor:
    logits = model(input_ids=window[:, :-1]).logits
    return F.cross_entropy(logits.float().reshape(-1, logits.size(-1)), window[:, 1:].reshape(-1))


def train_target(cfg: TargetTrainConfig, log=print) -> dict:
    """Train, keep the best validation checkpoint, write the model folder; return the training summary."""
    cfg.validate()
    device = resolve_device(cfg.device)
    if device.type == "cpu" and not cfg.smoke:
        log("note: full-size training on a CPU takes hours; use --smoke here, or --device cuda on a GPU")
    threads = torch.get_num_threads()
    if cfg.smoke and device.type == "cpu":
        # Tiny matrices gain nothing from threads, and on a shared 2-core CI machine OpenMP threads
        # that spin-wait on each other made a smoke run 6x slower.
        torch.set_num_threads(1)
    try:
        return _train_target(cfg, device, log)
    finally:
        torch.set_num_threads(threads)


def _split_docs(cfg: TargetTrainConfig) -> dict[str, dict[str, list[str]]]:
    """Documents per split and domain. Corpus v3 adds ``heldout_v3`` (its own held-out split); ``heldout`` stays
    v1's held-out documents (also held out of v3), so every family is measured on the same text."""
    # smoke: v1's validation and held-out splits a prefix too, as long as the training's (its first windows, all a
    # smoke run measures, are the same; tokenizing the whole splits was a third of a smoke run)
    smoke_chars = cfg.max_chars_per_domain if cfg.smoke else None
    if cfg.corpus == "v3":
        from peagle_nb.text import corpus_v3

        corpus_v3.verify_shards()  # a missing or changed shard stops here, naming the rebuild command
        # smoke: every split a prefix (tokenizing the whole v3 validation and held-out splits takes minutes)
        v3 = {split: {d: _limit(corpus_v3.load_documents(d, split), cfg.max_chars_per_domain
                                if split == "train" or cfg.smoke else None) for d in cfg.domains}
              for split in ("train", "validation", "heldout")}
        return {"train": v3["train"], "validation": v3["validation"], "heldout_v3": v3["heldout"],
                "heldout": {d: _limit(load_documents(d, "heldout"), smoke_chars) for d in cfg.domains}}
    return {"train": {d: _limit(load_documents(d, "train"), cfg.max_chars_per_domain) for d in cfg.domains},
            "validation": {d: _limit(load_documents(d, "validation"), smoke_chars) for d in cfg.domains},
            "heldout": {d: _limit(load_documents(d, "heldout"), smoke_chars) for d in cfg.domains}}


def _train_target(cfg: TargetTrainConfig, device: torch.device, log) -> dict:
    from transformers import LlamaForCausalLM

    torch.manual_seed(cfg.seed)
    gen = torch.Generator().manual_seed(cfg.seed)
    t0 = time.perf_counter()
    docs = _split_docs(cfg)
    domains = list(cfg.domains)
    if cfg.tokenizer_from is not None:
        from transformers import PreTrainedTokenizerFast

        tokenizer = PreTrainedTokenizerFast.from_pretrained(str(cfg.tokenizer_from))
        sample = {d: _limit(docs["train"][d], 2_000_000) for d in domains}  # coverage counts on a 2 M-char sample
        tok_report = tokenizer_report(tokenizer, sample, docs["validation"], (), cfg.draft_vocab_sizes)
        tok_report["reused_from"] = str(cfg.tokenizer_from)
    else:
        tokenizer = train_tokenizer([t for d in domains for t in docs["train"][d]], vocab_size=cfg.vocab_size)
        tok_report = tokenizer_report(tokenizer, docs["train"], docs["validation"], cfg.vocab_sweep,
                                      cfg.draft_vocab_sizes)
    # windows are cut on the device: a large corpus's streams are copied there once
    streams = [token_stream(tokenizer, docs["train"][d]).to(device) for d in domains]
    val = {d: token_stream(tokenizer, docs["validation"][d]) for d in domains}
    held = {d: token_stream(tokenizer, docs["heldout"][d]) for d in domains}
    sizes = torch.tensor([float(len(s)) for s in streams])
    probs = sizes ** cfg.mix_alpha / (sizes ** cfg.mix_alpha).sum()
    log(f"tokenizer: vocab {len(tokenizer)} ({time.perf_counter() - t0:.1f}s with its measurements); "
        + ", ".join(f"{d} {r['bytes_per_token']:.2f} bytes/token {r['tokens_per_char']:.3f} tokens/char"
                    for d, r in tok_report["per_domain"].items())
        + f"; proposed draft vocabulary {tok_report['proposed_draft_vocab_size']}")
    log("train tokens " + ", ".join(f"{d} {len(s):,}" for d, s in zip(domains, streams))
        + "; validation tokens " + ", ".join(f"{d} {len(val[d]):,}" for d in domains)
        + "; heldout tokens " + ", ".join(f"{d} {len(held[d]):,}" for d in domains))

    config = make_config(len(tokenizer), tokenizer.eos_token_id, tokenizer.pad_token_id, **cfg.arch)
    model = LlamaForCausalLM(config).to(device)
    n_params = sum(p.numel() for p in model.parameters())
    log(f"model: {config.num_hidden_layers} layers, hidden {config.hidden_size}, {n_params / 1e6:.2f}M params, "
        f"device {device}")
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": cfg.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=cfg.lr, betas=(0.9, 0.95), fused=device.type == "cuda")

    def validation_loss() -> dict[str, float]:
        return {d: heldout_loss(model, val[d], cfg.seq_len, cfg.eval_windows, device) for d in domains}

    history, best = [], None
    loss_sum = torch.zeros((), device=device)  # summed on device: no host sync per step
    loss_n, first_loss = 0, None
    t_train = time.perf_counter()
    tokens_seen = 0
    step = 0

    def checkpoint(rec_train_loss: float | None) -> None:
        nonlocal best
        ev = validation_loss()
        mean = sum(ev.values()) / len(ev)
        rec = {"step": step, "tokens": tokens_seen, "validation_loss": ev,
               "seconds": round(time.perf_counter() - t_train, 1)}
        if rec_train_loss is not None:
            rec["train_loss"] = rec_train_loss
        history.append(rec)
        if best is None or mean < best[0]:
            best = (mean, step, ev, copy.deepcopy({k: v.detach().to("cpu") for k, v in model.state_dict().items()}))
        log(f"step {step:5d}  " + (f"train {rec_train_loss:.3f}  " if rec_train_loss is not None else "")
            + "validation " + "  ".join(f"{d} {v:.3f}" for d, v in ev.items())
            + f"  {tokens_seen / max(1e-9, time.perf_counter() - t_train) / 1e3:.0f}k tok/s")

    model.train()
    while step < cfg.steps:
        elapsed = time.perf_counter() - t_train
        if cfg.time_budget_s is not None and elapsed >= cfg.time_budget_s:
            break
        # LR schedule: whichever runs out first, the step count or the time budget
        progress = max(step / cfg.steps, elapsed / cfg.time_budget_s if cfg.time_budget_s else 0.0)
        for g in opt.param_groups:
            g["lr"] = lr_at(cfg, step, progress)
        batch = sample_batch(streams, probs, cfg.batch_size, cfg.seq_len, gen).to(device, non_blocking=True)
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=device.type == "cuda"):
            loss = lm_loss(model, batch)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
        opt.step()
        step += 1
        tokens_seen += batch[:, 1:].numel()
        loss_sum += loss.detach()
        loss_n += 1
        if first_loss is None:
            first_loss = loss.item()
        if step % cfg.eval_every == 0 or step == cfg.steps:
            checkpoint(loss_sum.item() / max(1, loss_n))
            loss_sum.zero_()
            loss_n = 0
    train_s = time.perf_counter() - t_train
    if best is None or history[-1]["step"] != step:
        checkpoint(None)
    model.load_state_dict(best[3])
    model.eval()
    samples = greedy_samples(model, tokenizer, device, docs["heldout"], cfg.n_samples)
    save_target(model, tokenizer, cfg.out)

    summary = {
        "config": {k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(cfg).items()},
        "params": n_params,
        "layers": config.num_hidden_layers,
        "hidden_size": config.hidden_size,
        "vocab_size": len(tokenizer),
        "aux_layer_ids": list(aux_layer_ids(config.num_hidden_layers)),
        "domains": domains,
        "corpus": cfg.corpus,
        "train_tokens": {d: len(s) for d, s in zip(domains, streams)},
        "domain_sampling": {d: round(float(p), 4) for d, p in zip(domains, probs)},
        "validation_tokens": {d: len(val[d]) for d in domains},
        "tokenizer": tok_report,
        "steps_run": step,
        "tokens_seen": tokens_seen,
        "train_seconds": round(train_s, 1),
        "best_step": best[1],
        "first_train_loss": first_loss,
        "validation_loss": best[2],
        "uniform_ppl": len(tokenizer),
        "history": history,
        "samples": samples,
        "device": _device_name(device),
        "versions": _versions(),
    }
    # v1's held-out split is small: measured whole for family v3, as the tiny target was (comparable numbers);
    # a smoke run (tests) takes its first windows only: the whole split was 50 of a smoke run's 80 s on two cores
    heldout_windows = None if cfg.corpus == "v3" and not cfg.smoke else cfg.eval_windows
    summary.update(measure_heldout(cfg.out, device, cfg.seq_len, heldout_windows, docs["heldout"]))
    baseline = paths.models_dir() / "tiny-target" / "training_log.json"
    if cfg.corpus == "v3" and baseline.is_file():  # the model this family must beat, on the same documents
        base = json.loads(baseline.read_text(encoding="utf-8"))
        summary["baseline_heldout_bits_per_byte"] = {d: r["bits_per_byte"] for d, r in base["heldout"].items()}
    if "heldout_v3" in docs:
        v3 = measure_heldout(cfg.out, device, cfg.seq_len, cfg.heldout_windows, docs["heldout_v3"])
        summary["heldout_v3"] = {d: {k: v for k, v in r.items() if k != "windows"} | {"windows_measured": len(
            r["windows"])} for d, r in v3["heldout"].items()}
    write_log_and_card(cfg.out, summary)
    log(f"best step {best[1]}: heldout " + ", ".join(
        f"{d} loss {r['loss']:.3f} ppl {r['ppl']:.1f} ({r['bits_per_byte']:.3f} bits/byte)"
        for d, r in summary["heldout"].items()) + f"; wrote {cfg.out}")
    return summary


def measure_heldout(folder: Path, device: torch.device, seq_len: int, max_windows: int | None,
                    heldout_docs: dict[str, list[str]]) -> dict:
    """The saved model (bf16 weights) reloaded in fp32 and measured window by window on the held-out split:
    the log fields ``heldout`` (per domain: windows, loss, ppl, bits_per_byte, tokens), ``heldout_loss``,
    ``heldout_ppl``, ``heldout_tokens`` and ``evaluation`` (how and where)."""
    model, tokenizer = load_target(folder, dtype=torch.float32, device=device)
    streams = {d: token_stream(tokenizer, docs) for d, docs in heldout_docs.items()}
    t0 = time.perf_counter()
    res = evaluate_split(model, streams, heldout_docs, seq_len, device, max_windows, autocast=False)
    return {"heldout": res, "heldout_loss": {d: r["loss"] for d, r in res.items()},
            "heldout_ppl": {d: r["ppl"] for d, r in res.items()},
            "heldout_tokens": {d: r["tokens"] for d, r in res.items()},
            "evaluation": {"split": "heldout", "seq_len": seq_len, "max_windows": max_windows,
                           "dtype": "float32 compute, bf16 weights as saved", "device": _device_name(device),
                           "seconds": round(time.perf_counter() - t0, 1), "versions": _versions()}}


def write_log_and_card(out: Path, summary: dict) -> None:
    (Path(out) / "training_log.json").write_text(json.dumps(summary, indent=1, ensure_ascii=False) + "\n",
                                                  encoding="utf-8")
    write_card(out)


def write_card(out: Path) -> None:
    """(Re)write ``out/README.md`` from ``out/training_log.json``."""
    summary = json.loads((Path(out) / "training_log.json").read_text(encoding="utf-8"))
    (Path(out) / "README.md").write_text(model_card(summary), encoding="utf-8")


def reevaluate_target(out: Path, device: str = "auto", domains: tuple[str, ...] = DOMAINS, log=print) -> dict:
    """``--eval-only``: re-measure the saved model in ``out`` on the held-out split (per window, fp32) and its
    tokenizer on the validation split; rewrite ``training_log.json`` (earlier evaluation kept under
    ``earlier_evaluations``) and the model card."""
    out = Path(out)
    log_path = out / "training_log.json"
    if not log_path.is_file():
        raise SystemExit(f"--eval-only needs {log_path} (written by a training run). Fix: train first.")
    summary = json.loads(log_path.read_text(encoding="utf-8"))
    dev = resolve_device(device)
    seq_len = summary["config"]["seq_len"]
    max_windows = summary["config"].get("eval_windows")
    earlier = {k: summary.get(k) for k in ("heldout_loss", "heldout_ppl", "evaluation") if k in summary}
    summary.setdefault("earlier_evaluations", []).append(earlier)
    _, tokenizer = load_target(out)
    train = {d: _limit(load_documents(d, "train"), summary["config"].get("max_chars_per_domain")) for d in domains}
    validation = {d: load_documents(d, "validation") for d in domains}
    sizes = [v for v in summary["config"].get("draft_vocab_sizes", (1024, 2048, 3072, 4096)) if v <= len(tokenizer)]
    summary["tokenizer"] = tokenizer_report(tokenizer, train, validation, (), sizes)
    summary.update(measure_heldout(out, dev, seq_len, max_windows, {d: load_documents(d, "heldout") for d in domains}))
    summary["domains"] = list(domains)
    write_log_and_card(out, summary)
    log("re-measured: " + ", ".join(f"{d} ppl {r['ppl']:.2f}" for d, r in summary["heldout"].items()))
    return summary


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--smoke", action="store_true", help="tiny configuration, about 1 minute on CPU (for tests)")
    p.add_argument("--out", type=Path, default=None,
                   help="model folder to write (default: data/models/tiny-target, "
                        "or build/models/tiny-target-smoke with --smoke)")
    p.add_argument("--steps", type=int, default=None, help="maximum optimizer steps")
    p.add_argument("--time-budget-s", type=float, default=None, help="stop after this many training seconds "
                   "(the LR schedule follows elapsed time)")
    p.add_argument("--batch-size", type=int, default=None)
    p.add_argument("--seq-len", type=int, default=None)
    p.add_argument("--lr", type=float, default=None)
    p.add_argument("--eval-every", type=int, default=None)
    p.add_argument("--eval-windows", type=int, default=None,
                   help="validation/held-out windows per domain per evaluation (default: all; smoke: 8)")
    p.add_argument("--vocab-size", type=int, default=None, help=f"BPE vocabulary (default {DEFAULT_VOCAB_SIZE})")
    p.add_argument("--vocab-sweep", type=int, nargs="*", default=None,
                   help="tokenizer sizes to measure on the validation split (default 4096 6144 8192)")
    p.add_argument("--domains", nargs="+", choices=DOMAINS, default=None, help="corpus domains (default: all)")
    p.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--corpus", choices=CORPORA, default="v1",
                   help="v1: the committed corpus (tiny family); v3: data/corpus/v3 (family v3, on a GPU)")
    p.add_argument("--layers", type=int, default=None,
                   help=f"decoder layers (default {DEFAULT_ARCH['num_hidden_layers']}; "
                        f"{V3_ARCH['num_hidden_layers']} with --corpus v3)")
    p.add_argument("--width", type=int, default=None,
                   help="hidden size, a multiple of 64 (heads of 64, MLP 2.5x; default 256): a wider target keeps a "
                        "large GPU busier per layer")
    p.add_argument("--tokenizer-from", type=Path, default=None,
                   help="reuse this model folder's tokenizer (family v3 reuses the tiny target's)")
    p.add_argument("--mix-alpha", type=float, default=None,
                   help="domain sampling ~ train tokens ** alpha (default 1; family v3 0.7)")
    p.add_argument("--heldout-windows", type=int, default=None, help="windows per domain of v3's held-out split")
    p.add_argument("--eval-only", action="store_true",
                   help="re-measure the model already in --out and rewrite its training_log.json and model card")


def width_arch(width: int | None) -> dict:
    """The architecture fields a hidden size sets: attention heads of 64 dimensions, an MLP 2.5x as wide (rounded to
    64, as the default 256 -> 640). Empty for None."""
    if width is None:
        return {}
    heads = width // 64
    return {"hidden_size": width, "num_attention_heads": heads, "num_key_value_heads": heads,
            "intermediate_size": round(2.5 * width / 64) * 64}


def config_from_args(args: argparse.Namespace) -> TargetTrainConfig:
    overrides = {"steps": args.steps, "time_budget_s": args.time_budget_s, "batch_size": args.batch_size,
                 "seq_len": args.seq_len, "lr": args.lr, "eval_every": args.eval_every,
                 "eval_windows": args.eval_windows, "vocab_size": args.vocab_size,
                 "vocab_sweep": tuple(args.vocab_sweep) if args.vocab_sweep is not None else None,
                 "domains": tuple(args.domains) if args.domains else None, "device": args.device, "seed": args.seed,
                 "corpus": getattr(args, "corpus", None), "tokenizer_from": getattr(args, "tokenizer_from", None),
                 "mix_alpha": getattr(args, "mix_alpha", None),
                 "heldout_windows": getattr(args, "heldout_windows", None)}
    layers = getattr(args, "layers", None)
    width = getattr(args, "width", None)
    if width is not None and (width < 64 or width % 64):
        raise SystemExit(f"--width {width}: use a multiple of 64 (attention heads of 64 dimensions), e.g. 512")
    if args.smoke:
        if layers or width:
            overrides["arch"] = dict(SMOKE_ARCH, **({"num_hidden_layers": layers} if layers else {}),
                                     **width_arch(width))
        out = args.out or paths.repo_root() / "build" / "models" / "tiny-target-smoke"
        return TargetTrainConfig.smoke_config(out, **overrides)
    if overrides["corpus"] == "v3" or layers or width:
        base = V3_ARCH if overrides["corpus"] == "v3" else DEFAULT_ARCH
        overrides["arch"] = dict(base, **({"num_hidden_layers": layers} if layers else {}), **width_arch(width))
    out = args.out or paths.models_dir() / "tiny-target"
    return TargetTrainConfig(out=out, **{k: v for k, v in overrides.items() if v is not None})


def run(args: argparse.Namespace) -> int:
    cfg = config_from_args(args)
    if args.eval_only:
        reevaluate_target(cfg.out, args.device, cfg.domains)
    else:
        train_target(cfg)
    return 0

