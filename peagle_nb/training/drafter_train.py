"""The training loop both draft heads share (``peagle-nb train eagle3|peagle``). Explained in notebooks 02, 03.

Steps: load the target; build (or reuse, ``--data-cache``) the self-distillation data (target-regenerated
continuations of corpus-train prompts); size the head like the target, pick its draft vocabulary from the
generated tokens' counts, warm-start its embedding and ``lm_head`` from the target (or continue an earlier
run, ``--init-from``); AdamW with warmup + cosine decay (bf16 autocast on CUDA), the target computing each
batch's features and soft labels (``TargetTeacher``); measure greedy acceptance on validation prompts (new
corpus-train prompts, for choosing between runs) and on the held-out prompt sets for K = 1..8; export in
vLLM's layout; write ``training_log.json`` and the model card. The method-specific loss is passed in
(``eagle3.ttt_loss``, ``peagle.cod_loss``).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import platform
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

import torch

from peagle_nb import paths
from peagle_nb.corpus import DOMAINS, load_documents
from peagle_nb.models.heads import DraftHead, config_for_target, drafter_layer_ids, count_parameters, export_head, init_from_target
from peagle_nb.models.target import load_target, mask_token_id
from peagle_nb.training.drafter_data import (DEFAULT_GREEDY_FRACTION, DEFAULT_SAMPLE_TEMPERATURE, DrafterData,
                                             TargetTeacher, build_drafter_data, corpus_prompts, sample_prompt_ids,
                                             without_domains)
from peagle_nb.training.drafter_eval import evaluate_head, read_prompt_ids
from peagle_nb.training.schedule import lr_at


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
    extra: dict = field(default_factory=dict)

    @classmethod
    def smoke_config(cls, kind: str, out: Path, **overrides) -> "DrafterTrainConfig":
        base = dict(kind=kind, out=out, steps=15, batch_size=8, lr=3e-3, warmup_steps=3, n_sequences=16,
                    seq_len=64, prompt_lengths=(12, 16), draft_vocab_size=256, eval_prompts=1,
                    eval_max_new_tokens=16, smoke=True, log_every=5, k=4 if kind == "peagle" else 3)
        base.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**base)


def _log(msg: str) -> None:
    print(msg, flush=True)


def resolve_device(device: str) -> torch.device:
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("--device cuda but torch sees no CUDA GPU. Fix: use --device cpu (or auto).")
    return torch.device(device)


def heldout_prompt_sets(tokenizer, n: int | None, seed: int = 0) -> dict[str, list[torch.Tensor]]:
    """``data/prompts/{prose,code}.jsonl`` token ids; if a file is missing (early checkouts), prompts cut
    from the corpus's held-out documents instead (named ``<domain>-corpus-heldout``)."""
    sets = {}
    for domain in DOMAINS:
        path = paths.prompts_dir() / f"{domain}.jsonl"
        if path.is_file():
            sets[domain] = read_prompt_ids(tokenizer, path, n)
        else:
            docs = load_documents(domain, "heldout")
            sets[f"{domain}-corpus-heldout"] = sample_prompt_ids(tokenizer, docs, n or 32, (24, 32, 40), seed + 99)
    return sets


_MEMO: dict = {}  # the last data built in this process (train eagle3 then peagle in one process: built once)


def get_data(cfg: DrafterTrainConfig, target, tokenizer, log=print) -> tuple[DrafterData, dict]:
    """Self-distillation data: reuse this process's last build or read ``cfg.data_cache`` if either matches
    this configuration, else build (and save to ``cfg.data_cache``)."""
    key = {"format": "tokens-v3", "n_sequences": cfg.n_sequences, "seq_len": cfg.seq_len,
           "draft_vocab_size": cfg.draft_vocab_size,
           "prompt_lengths": list(cfg.prompt_lengths), "greedy_fraction": cfg.greedy_fraction,
           "sample_temperature": cfg.sample_temperature, "domains": list(DOMAINS), "seed": cfg.seed,
           "vocab_size": target.config.vocab_size, "hidden_size": target.config.hidden_size,
           "layers": target.config.num_hidden_layers, "target": str(cfg.target)}
    if _MEMO.get("key") == key:
        log("drafter data: reusing this process's data")
        if cfg.data_cache and not Path(cfg.data_cache).is_file():
            _save_data(cfg.data_cache, key, _MEMO["data"], _MEMO["info"])
        return _MEMO["data"], _MEMO["info"]
    if cfg.data_cache and Path(cfg.data_cache).is_file():
        blob = torch.load(cfg.data_cache, map_location="cpu")
        if blob.get("key") == key:
            log(f"drafter data: reusing {cfg.data_cache}")
            return DrafterData(**blob["data"]), blob["info"]
        log(f"drafter data: {cfg.data_cache} was built for another configuration; rebuilding")
    prompts, labels = corpus_prompts(tokenizer, cfg.n_sequences, cfg.prompt_lengths, cfg.seed, DOMAINS)
    t0 = time.time()
    data, info = build_drafter_data(target, prompts, cfg.seq_len, cfg.draft_vocab_size,
                                    greedy_fraction=cfg.greedy_fraction, temperature=cfg.sample_temperature,
                                    seed=cfg.seed, domain=labels, domains=DOMAINS,
                                    gen_batch=cfg.gen_batch or (4096 if target.device.type == "cuda" else 64), log=log)
    info["build_seconds"] = round(time.time() - t0, 1)
    info["labels"] = "teacher"  # features and soft labels come from the target per batch (TargetTeacher)
    _MEMO.clear()
    _MEMO.update(key=key, data=data, info=info)
    if cfg.data_cache:
        _save_data(cfg.data_cache, key, data, info)
    return data, info


def _save_data(path: Path, key: dict, data: DrafterData, info: dict) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    torch.save({"key": key, "info": info, "data": data.state()}, path)


def run_mode(cfg: DrafterTrainConfig, args: argparse.Namespace, loss_fn: Callable) -> int:
    """What ``peagle-nb train eagle3|peagle`` does with its options: build the data only, re-evaluate, or train."""
    if args.data_only:
        build_data_only(cfg)
    elif args.eval_only:
        reevaluate(cfg, note=args.note)
    else:
        train_drafter(cfg, loss_fn)
    return 0


def build_data_only(cfg: DrafterTrainConfig, log=_log) -> dict:
    """``--data-only``: build the self-distillation data into ``cfg.data_cache`` and stop (several runs, even
    concurrent ones, can then share it)."""
    if cfg.data_cache is None:
        raise SystemExit("--data-only needs --data-cache PATH (where to save the data)")
    target, tokenizer = load_target(cfg.target, device=resolve_device(cfg.device))
    _, info = get_data(cfg, target, tokenizer, log)
    log(f"wrote {cfg.data_cache}")
    return info


def make_head(cfg: DrafterTrainConfig, target, tokenizer, draft_ids: torch.Tensor) -> DraftHead:
    """A fresh head sized for ``target``, with the chosen draft vocabulary, warm-started from the target;
    or, with ``cfg.init_from``, that exported head (it must have this shape and draft vocabulary)."""
    mask_id = mask_token_id(tokenizer) if cfg.kind == "peagle" else None
    hcfg = config_for_target(target.config, cfg.kind, num_layers=cfg.num_layers,
                             draft_vocab_size=cfg.draft_vocab_size, mask_token_id=mask_id, trained_k=cfg.k,
                             intermediate_size=cfg.intermediate_size)
    torch.manual_seed(cfg.seed)
    head = DraftHead(hcfg)
    head.set_draft_vocab(draft_ids)
    if cfg.init_from is not None:
        from peagle_nb.models.heads import load_head

        earlier = load_head(cfg.init_from, target=target)
        theirs, ours = dataclasses.asdict(earlier.config.replace(extra={})), dataclasses.asdict(hcfg.replace(extra={}))
        differ = [f"{k} {theirs[k]} (this run: {ours[k]})" for k in ours if theirs[k] != ours[k]]
        if differ:
            raise SystemExit(f"--init-from {cfg.init_from}: that head differs from this run's in {', '.join(differ)}. "
                             f"Fix: pass the same --num-layers/--intermediate-size/--k/--draft-vocab-size and data "
                             f"options as the run that made it.")
        # The earlier head's draft vocabulary (d2t/t2d) comes with its state: new data (another --seed or
        # --n-sequences) may count a slightly different top-Vd set, but lm_head's rows belong to the old one.
        head.load_state_dict(earlier.state_dict())
    else:
        init_from_target(head, target)
    if cfg.kind == "eagle3":  # EAGLE-3 keeps the target's embedding (frozen); P-EAGLE learns its own (<mask> row)
        head.embed_tokens.weight.requires_grad_(False)
    return head


def train_drafter(cfg: DrafterTrainConfig, loss_fn: Callable, log=None) -> dict:
    """Train one head with ``loss_fn(head, batch, cfg, generator) -> (loss, metrics dict)``; export; evaluate."""
    log = log or _log
    device = resolve_device(cfg.device)
    torch.manual_seed(cfg.seed)
    target, tokenizer = load_target(cfg.target, device=device)
    target.requires_grad_(False)
    data, data_info = get_data(cfg, target, tokenizer, log)
    data, data_info = without_domains(data, data_info, tuple(cfg.exclude_domains), target.config.vocab_size, log)
    tokens = data.tokens.to(device)
    head = make_head(cfg, target, tokenizer, data.draft_ids).to(device)
    teacher = TargetTeacher(target, head.aux_layer_ids, head.target_to_draft_ids())  # soft labels over the head's vocabulary
    params = [p for p in head.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=cfg.lr, weight_decay=cfg.weight_decay, betas=(0.9, 0.95))
    gen = torch.Generator().manual_seed(cfg.seed)
    history, t0, step = [], time.time(), 0
    log(f"{cfg.kind}: {count_parameters(head) / 1e6:.2f}M parameters, {len(head.layers)} layer(s), "
        f"draft vocab {cfg.draft_vocab_size}, device {device}")
    head.train()
    window = []
    for step in range(cfg.steps):
        elapsed = time.time() - t0
        if cfg.time_budget_s and elapsed > cfg.time_budget_s:
            log(f"time budget reached after {step} steps")
            break
        progress = max(step / cfg.steps, elapsed / cfg.time_budget_s if cfg.time_budget_s else 0.0)
        for gr in opt.param_groups:
            gr["lr"] = lr_at(cfg, step, progress)
        idx = torch.randint(0, data.n, (cfg.batch_size,), generator=gen)
        batch = teacher(tokens[idx.to(device)])
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=device.type == "cuda"):
            loss, metrics = loss_fn(head, batch, cfg, gen)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, cfg.grad_clip)
        opt.step()
        window.append({"loss": float(loss.detach()), **{k: float(v) for k, v in metrics.items()}})
        if (step + 1) % cfg.log_every == 0 or step == cfg.steps - 1:
            avg = {k: sum(w[k] for w in window) / len(window) for k in window[0]}
            history.append({"step": step + 1, "seconds": round(time.time() - t0, 1), **avg})
            log(f"step {step + 1}: " + ", ".join(f"{k} {v:.3f}" for k, v in avg.items()))
            window = []
    else:
        step = cfg.steps
    steps_run = step if step else cfg.steps
    train_seconds = time.time() - t0
    head.eval()

    cfg.out.mkdir(parents=True, exist_ok=True)
    export_head(head, cfg.out)
    summary = {
        "kind": cfg.kind,
        "config": {k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(cfg).items()},
        "head_config": head.config.to_vllm_config(),
        "params": count_parameters(head),
        "data": data_info,
        "steps_run": steps_run,
        "train_seconds": round(train_seconds, 1),
        "init_from": _earlier_run(cfg.init_from),
        "history": history,
        "device": _device_name(device),
        "versions": _versions(),
    }
    return evaluate_and_write(summary, head, target, tokenizer, cfg, device, log)


def _earlier_run(init_from: Path | None) -> dict | None:
    """What the run that ``--init-from`` continues did (so a model card states the whole training budget)."""
    if init_from is None:
        return None
    log_path = Path(init_from) / "training_log.json"
    earlier = json.loads(log_path.read_text()) if log_path.is_file() else {}
    total = lambda key: earlier.get(key, 0) + ((earlier.get("init_from") or {}).get(key, 0))  # noqa: E731
    return {"path": str(init_from), "steps_run": total("steps_run"), "train_seconds": round(total("train_seconds"), 1)}


def validation_prompt_sets(tokenizer, n: int, seed: int = 0) -> dict[str, list[torch.Tensor]]:
    """``n`` prompts per domain cut from the corpus's VALIDATION documents: for choosing between training runs
    without looking at the held-out sets the model cards report."""
    return {f"{domain}-val": sample_prompt_ids(tokenizer, load_documents(domain, "validation"), n, (24, 32, 40),
                                               seed=seed + 1000 + i)
            for i, domain in enumerate(DOMAINS)}


def _device_name(device: torch.device) -> str:
    return torch.cuda.get_device_name(0) if device.type == "cuda" else f"CPU ({platform.machine()})"


def _versions() -> dict:
    return {"torch": torch.__version__, "python": platform.python_version(),
            "transformers": __import__("transformers").__version__}


def evaluate_and_write(summary: dict, head: DraftHead, target, tokenizer, cfg: DrafterTrainConfig, device,
                       log=_log) -> dict:
    """Measure greedy acceptance for K = 1..eval_k_max on the held-out sets; write ``training_log.json`` and
    the model card into ``cfg.out``."""
    t1 = time.time()
    ks = range(1, cfg.eval_k_max + 1)
    head = head.to(device).eval()
    if "acceptance" in summary:  # --eval-only: keep the earlier measurement for the record
        summary.setdefault("earlier_evaluations", []).append({"eval": summary.get("eval"),
                                                              "acceptance": summary["acceptance"]})
    if cfg.val_prompts:
        summary["validation"] = {name: evaluate_head(target, head, prompts, cfg.eval_max_new_tokens, ks)
                                 for name, prompts in validation_prompt_sets(tokenizer, cfg.val_prompts, cfg.seed).items()}
    summary["acceptance"] = {name: evaluate_head(target, head, prompts, cfg.eval_max_new_tokens, ks)
                             for name, prompts in heldout_prompt_sets(tokenizer, cfg.eval_prompts, cfg.seed).items()}
    summary["eval"] = {"device": _device_name(device), "prompts_per_set": cfg.eval_prompts,
                       "max_new_tokens": cfg.eval_max_new_tokens, "seconds": round(time.time() - t1, 1),
                       "versions": _versions()}
    for name, res in {**summary.get("validation", {}), **summary["acceptance"]}.items():
        log(f"{name}: tau " + ", ".join(f"K={k} {r['tau']:.2f}" for k, r in res.items()))
    cfg.out.mkdir(parents=True, exist_ok=True)
    (cfg.out / "training_log.json").write_text(json.dumps(summary, indent=1) + "\n")
    write_card(cfg.out)
    log(f"wrote {cfg.out}")
    return summary


def write_card(out: Path) -> None:
    """(Re)write ``out/README.md`` from ``out/training_log.json``; a P-EAGLE card also compares with the
    EAGLE-3 head next to it (``../tiny-eagle3``) when that one has been measured."""
    out = Path(out)
    summary = json.loads((out / "training_log.json").read_text())
    other = out.parent / "tiny-eagle3" / "training_log.json"
    compare = None
    if summary["kind"] == "peagle" and other.is_file():
        compare = json.loads(other.read_text()).get("acceptance")
    (out / "README.md").write_text(model_card(summary, compare))


def reevaluate(cfg: DrafterTrainConfig, log=_log, note: str | None = None) -> dict:
    """``--eval-only``: re-measure an exported head (e.g. trained on a GPU, measured on CPU) and rewrite its
    ``training_log.json`` and model card; ``note`` (``--note``) is kept in both, for how the run was made."""
    from peagle_nb.models.heads import load_head

    device = resolve_device(cfg.device)
    log_path = cfg.out / "training_log.json"
    if not log_path.is_file():
        raise SystemExit(f"--eval-only needs {log_path} (written by a training run). Fix: train first.")
    summary = json.loads(log_path.read_text())
    if note and note not in summary.setdefault("notes", []):
        summary["notes"].append(note)
    target, tokenizer = load_target(cfg.target, device=device)
    head = load_head(cfg.out, device=device)
    return evaluate_and_write(summary, head, target, tokenizer, cfg, device, log)


def _acceptance_tables(acc: dict) -> str:
    parts = []
    for name, res in acc.items():
        kmax = max(int(k) for k in res)
        head = "| K | steps | tau | " + " | ".join(f"a{j}" for j in range(1, kmax + 1)) + " |"
        sep = "|---" * (kmax + 3) + "|"
        rows = []
        for k, r in res.items():
            cells = [k, str(r["steps"]), f"{r['tau']:.2f}"] + [f"{a:.2f}" for a in r["accept_rate_per_position"]]
            cells += [""] * (kmax - int(k))
            rows.append("| " + " | ".join(cells) + " |")
        parts.append(f"**{name}** ({len(res)} values of K)\n\n{head}\n{sep}\n" + "\n".join(rows))
    return "\n\n".join(parts)


def _n_prompts(s: dict) -> str:
    n = {name: res[next(iter(res))].get("prompts") for name, res in s["acceptance"].items()}
    vals = sorted({v for v in n.values() if v is not None})
    return "/".join(map(str, vals)) if vals else "the"


def _comparison(s: dict, compare: dict | None) -> str:
    if not compare:
        return ""
    rows = []
    for name, res in s["acceptance"].items():
        if name not in compare:
            continue
        ks = [k for k in res if k in compare[name]]
        rows.append(f"| {name} | P-EAGLE (this head) | " + " | ".join(f"{res[k]['tau']:.2f}" for k in ks) + " |")
        rows.append(f"| {name} | EAGLE-3 (`tiny-eagle3`) | " + " | ".join(f"{compare[name][k]['tau']:.2f}" for k in ks)
                    + " |")
    if not rows:
        return ""
    n = len(next(iter(s["acceptance"].values())))
    k = "7" if "7" in next(iter(s["acceptance"].values())) else str(n)
    wins = [name for name, res in s["acceptance"].items() if name in compare and res[k]["tau"] >= compare[name][k]["tau"]]
    lead = (f"At K={k} P-EAGLE's acceptance length is at least EAGLE-3's only on {', '.join(wins)}." if wins else
            f"At K={k} EAGLE-3's acceptance length is higher than P-EAGLE's on every set.")
    verdict = (f"{lead} With a target this small and this predictable, "
               f"EAGLE-3's chain (each draft sees the previous ones) keeps a high conditional acceptance at depth, "
               f"while P-EAGLE's later slots must guess without them; P-EAGLE's gain is its drafting cost, one pass "
               f"for any K (measured by the engine, notebook 03).\n")
    if len(wins) == len(rows) // 2:
        verdict = f"At K={k} P-EAGLE's acceptance length is at least EAGLE-3's on every set.\n"
    return ("\n## Versus the EAGLE-3 head trained on the same data\n\nGreedy tau, same prompts and measurement:\n\n"
            "| set | head | " + " | ".join(f"K={k}" for k in range(1, n + 1)) + " |\n"
            + "|---" * (n + 2) + "|\n" + "\n".join(rows) + "\n\n" + verdict)


def _continuations(d: dict) -> str:
    if "decoding" in d:  # written by drafter_data since sampling became the default
        rep = d.get("repetition_fraction")
        reps = ("; generated tokens inside a repeated 8-gram: " + ", ".join(
            f"{k} {100 * v:.1f}%" for k, v in rep["by_domain"].items() if v is not None)) if rep else ""
        return d["decoding"] + reps
    if d["n_greedy"] == d["n_sequences"]:
        return "all greedy, the way the heads are evaluated"
    return f"{d['n_greedy']:,} greedy, the rest sampled at T={d['sample_temperature']}"


def _prompt_domains(d: dict) -> str:
    per = d.get("sequences_per_domain")
    if not per:
        return "prose + code, half each"
    out = ", ".join(f"{k} {v:,}" for k, v in per.items())
    return out + (f"; trained without {', '.join(d['excluded_domains'])}" if d.get("excluded_domains") else "")


def _teacher(d: dict) -> str:
    if d.get("labels") == "teacher":
        return "the target computes each batch's features (3 aux layers) and soft labels on the fly"
    return "cached target features (3 aux layers) and logits"  # runs before the teacher existed


def _continued(s: dict) -> str:
    e = s.get("init_from")
    if not e:
        return ""
    return (f", continuing `{Path(e['path']).name}` ({e['steps_run']} steps, {e['train_seconds']:.0f} s before): "
            f"{s['steps_run'] + e['steps_run']} steps, {s['train_seconds'] + e['train_seconds']:.0f} s in all")


def _validation(s: dict) -> str:
    val = s.get("validation")
    if not val:
        return ""
    rows = "\n".join(f"| {name} | {res[next(iter(res))]['prompts']} | " + " | ".join(f"{r['tau']:.2f}" for r in res.values())
                     + " |" for name, res in val.items())
    ks = next(iter(val.values())).keys()
    return ("\n## Validation (for choosing between training runs)\n\nGreedy tau on new prompts cut from corpus-train "
            "documents (never the held-out sets above), measured right after training on the training device:\n\n"
            "| set | prompts | " + " | ".join(f"K={k}" for k in ks) + " |\n" + "|---" * (len(ks) + 2) + "|\n" + rows + "\n")


def _budget_experiment(s: dict) -> str:
    """A recorded "train longer" experiment (``budget_experiment`` in the log): K=7 tau of each run, and the gap."""
    e = s.get("budget_experiment")
    if not e:
        return ""
    sets = list(e["runs"][0]["tau"])
    rows = "\n".join(f"| {r['head']} | {r['run']} | {r['steps']} | {r['train_seconds']:.0f} | "
                     + " | ".join(f"{r['tau'][n][6]:.2f}" for n in sets) + " |" for r in e["runs"])
    best = lambda head, runs: {n: max(r["tau"][n][6] for r in runs if r["head"] == head) for n in sets}  # noqa: E731
    first = [r for r in e["runs"] if r["run"].startswith("shipped")]
    gap0, gap1 = (best("eagle3", first), best("peagle", first)), (best("eagle3", e["runs"]), best("peagle", e["runs"]))
    gaps = ", ".join(f"{n} {gap0[0][n] - gap0[1][n]:.2f} -> {gap1[0][n] - gap1[1][n]:.2f}" for n in sets)
    closed = [n for n in sets if gap1[1][n] >= gap1[0][n]]
    verdict = (f"P-EAGLE catches up on {', '.join(closed)}" if closed else
               "narrows" if all(gap1[0][n] - gap1[1][n] < gap0[0][n] - gap0[1][n] for n in sets) else "does not narrow")
    return (f"\n## Training longer ({e['date']}, {e['device']})\n\n{e['what']}\n\n"
            f"| head | run | steps in all | seconds in all | " + " | ".join(f"{n} tau K=7" for n in sets) + " |\n"
            + "|---" * (4 + len(sets)) + "|\n" + rows + f"\n\nEAGLE-3's lead at K=7 (best run of each head: {gaps}): "
            f"{verdict}.\n\n```bash\n{e['command']}\n```\n")


def model_card(s: dict, compare: dict | None = None) -> str:
    """The head's ``README.md``, written from the training summary (all numbers measured by this run)."""
    c, h, d = s["config"], s["head_config"], s["data"]
    kind = s["kind"]
    name = "tiny-eagle3" if kind == "eagle3" else "tiny-peagle"
    smoke = "\n> SMOKE RUN: a tiny configuration for tests, not the shipped head.\n" if c["smoke"] else ""
    if kind == "eagle3":
        arch = (f"EAGLE-3 draft head: `fc` (3 x {h['target_hidden_size']} -> {h['hidden_size']}) over the target's "
                f"layers {tuple(h['eagle_config']['eagle_aux_hidden_state_layer_ids'])}, ONE fused decoder layer "
                f"(attention over `cat(norm(embed), norm(hidden))`, 2 x {h['hidden_size']} wide), final norm, "
                f"`lm_head` over a {h['draft_vocab_size']}-token draft vocabulary (`d2t`/`t2d`). Embedding copied "
                f"from the target and frozen.")
        method = (f"training-time test: {c['k']} chained steps (k = 0..{c['k'] - 1}), step k feeding the head's own "
                  f"pre-norm hidden output of step k-1; loss = sum_k {c['ttt_decay']}^k x soft cross-entropy "
                  f"against the target's distribution (over the draft vocabulary)")
        serve = '{"method": "eagle3", "model": "data/models/tiny-eagle3", "num_speculative_tokens": 3}'
    else:
        arch = (f"P-EAGLE draft head: `fc` (3 x {h['target_hidden_size']} -> {h['hidden_size']}) over the target's "
                f"layers {tuple(h['eagle_config']['eagle_aux_hidden_state_layer_ids'])}, {h['num_hidden_layers']} "
                f"decoder layers (layer 0 fused 2 x {h['hidden_size']}, the rest plain Llama layers), final norm, "
                f"`lm_head` over a {h['draft_vocab_size']}-token draft vocabulary; its own embedding with a learned "
                f"`<mask>` row (id {h['mask_token_id']}) and a learned `mask_hidden` [1, "
                f"{3 * h['target_hidden_size']}]. All K drafts come from ONE forward pass.")
        method = (f"conditional drop-token depth sampling (COD) for K = {c['k']} (depth d keeps max({c['cod_r']}^d, "
                  f"{c['cod_r_min']}) of the anchors, only chains whose parent was kept), the matching attention mask "
                  f"(real context up to the anchor + earlier depths of the own chain), soft cross-entropy against "
                  f"the target's distribution, uniform over depths")
        serve = ('{"method": "eagle3", "model": "data/models/tiny-peagle", "num_speculative_tokens": 7, '
                 '"parallel_drafting": true}')
    smoke_flag = " --smoke" if c["smoke"] else ""
    # A time-budgeted run is reproduced by its step count (the schedule follows the same progress).
    steps = s["steps_run"] if c["time_budget_s"] else c["steps"]
    options = [f"--intermediate-size {c['intermediate_size']}" if c.get("intermediate_size") else "",
               f"--greedy-fraction {c['greedy_fraction']:g}" if c.get("greedy_fraction", 1.0) != 0.0 else "",
               f"--sample-temperature {c['sample_temperature']:g}" if c.get("sample_temperature", 1.0) != 1.0 else "",
               "".join(f"--exclude-domain {d} " for d in c.get("exclude_domains", ())).strip(),
               f"--cod-r {c['cod_r']:g} --cod-r-min {c['cod_r_min']:g}"
               if kind == "peagle" and (c["cod_r"], c["cod_r_min"]) != (0.7, 0.2) else "",
               f"--init-from {s['init_from']['path']}" if s.get("init_from") else ""]
    cmd = (f"peagle-nb train {kind}{smoke_flag} --steps {steps} --batch-size {c['batch_size']} --lr {c['lr']:g} "
           f"--k {c['k']} --n-sequences {c['n_sequences']} --seq-len {c['seq_len']} "
           + "".join(o + " " for o in options if o) + "--device cuda")
    budget = (f"\nThe run itself stopped at a {c['time_budget_s']:g} s time budget on {s['device']}, where "
              f"{s['steps_run']} steps fit." if c["time_budget_s"] else "")
    notes = "".join(f"\n\n{n}" for n in s.get("notes", []))
    reeval = ""
    if s.get("earlier_evaluations"):
        reeval = (f"\nThe acceptance tables were then re-measured on {s['eval']['device']} with\n`peagle-nb train {kind} "
                  f"--eval-only --device {'cuda' if 'CPU' not in s['eval']['device'] else 'cpu'} --out data/models/{name}` "
                  f"(the training run's own measurement on {s['earlier_evaluations'][0]['eval']['device']} is kept in "
                  f"`training_log.json`).")
    hist = "\n".join(f"| {r['step']} | {r['seconds']} | {r['loss']:.3f} | {r.get('acc0', float('nan')):.3f} |"
                     for r in s["history"][:: max(1, len(s["history"]) // 12)])
    return f"""# {name}
{smoke}
{arch}

| | |
|---|---|
| target | `data/models/tiny-target` (this head's `fc`, vocabulary and mask id only fit that model) |
| parameters | {s['params'] / 1e6:.2f}M, stored in bf16 |
| training data | {d['n_sequences']:,} sequences of {d['seq_len']} tokens: prompts ({'/'.join(map(str, c['prompt_lengths']))} tokens) cut from the corpus **train** split ({_prompt_domains(d)}), continued BY THE TARGET ITSELF ({_continuations(d)}); {d['generated_tokens']:,} generated tokens; {_teacher(d)} |
| draft vocabulary | the {d['draft_vocab_size']} most frequent tokens of the target's generations (covers {100 * d['draft_vocab_coverage']:.1f}% of them) |
| objective | {method} |
| optimisation | {s['steps_run']} steps x batch {c['batch_size']}, AdamW lr {c['lr']:g} (warmup {c['warmup_steps']}, cosine to {c['min_lr_frac']:g}x), grad clip {c['grad_clip']:g}, bf16 autocast on GPU; {s['train_seconds']:.0f} s of training{_continued(s)} |
| device | {s['device']} |
| versions | torch {s['versions']['torch']}, transformers {s['versions']['transformers']} |

## Greedy acceptance on the held-out prompt sets

Measured by `peagle_nb.training.drafter_eval` ({s['eval']['device']}, fp32, torch {s['eval']['versions']['torch']}) on
the {s['eval']['max_new_tokens']}-token greedy continuation of each of {_n_prompts(s)} held-out prompts per set (`data/prompts/*.jsonl`, never in training). tau = mean tokens per draft-verify
step (accepted drafts + the bonus token); a_j = fraction of steps whose j-th draft was accepted.

{_acceptance_tables(s['acceptance'])}
{_comparison(s, compare)}{_budget_experiment(s)}{_validation(s)}
## Training curve

| step | seconds | loss | depth-0 accuracy |
|---|---|---|---|
{hist}

## Use

vLLM: `--speculative-config '{serve}'`; this suite: `peagle_nb.models.heads.load_head("data/models/{name}")`.

## Reproduce

```bash
{cmd} --data-cache build/drafter_data.pt --out data/models/{name}
```
(`--data-cache` lets `train eagle3` and `train peagle` share the same self-distillation data.){budget}{reeval}{notes}
"""


def add_arguments(p: argparse.ArgumentParser, kind: str) -> None:
    p.add_argument("--smoke", action="store_true", help="tiny configuration, < 1 minute on CPU (for tests)")
    p.add_argument("--out", type=Path, default=None,
                   help=f"head folder to write (default data/models/tiny-{kind}; --smoke: build/models/tiny-{kind}-smoke)")
    p.add_argument("--target", type=Path, default=None, help="target model folder (default data/models/tiny-target)")
    p.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto")
    p.add_argument("--k", type=int, default=None,
                   help="P-EAGLE: deepest trained draft slot (default 8); EAGLE-3: TTT unroll steps (default 7)")
    p.add_argument("--num-layers", type=int, default=None, help="decoder layers (eagle3: 1; peagle default 4)")
    p.add_argument("--intermediate-size", type=int, default=None, help="MLP width (default: the target's)")
    p.add_argument("--steps", type=int, default=None)
    p.add_argument("--time-budget-s", type=float, default=None, help="stop training after this many seconds")
    p.add_argument("--batch-size", type=int, default=None)
    p.add_argument("--lr", type=float, default=None)
    p.add_argument("--n-sequences", type=int, default=None, help="self-distillation sequences to generate")
    p.add_argument("--seq-len", type=int, default=None, help="tokens per sequence (prompt + continuation)")
    p.add_argument("--draft-vocab-size", type=int, default=None)
    p.add_argument("--greedy-fraction", type=float, default=None,
                   help="fraction of continuations generated greedily (default 0: all sampled)")
    p.add_argument("--sample-temperature", type=float, default=None,
                   help="temperature of the sampled continuations (default 1: the target's own distribution)")
    p.add_argument("--exclude-domain", action="append", default=None, choices=DOMAINS,
                   help="train without this corpus domain's sequences (repeatable; e.g. ja)")
    p.add_argument("--data-cache", type=Path, default=None, help="save/reuse the generated data here")
    p.add_argument("--data-only", action="store_true",
                   help="only build the self-distillation data into --data-cache (to share it between runs)")
    p.add_argument("--init-from", type=Path, default=None,
                   help="continue training this exported head (same shape and data options)")
    p.add_argument("--val-prompts", type=int, default=None,
                   help="new corpus-train prompts per domain to measure after training (for choosing runs)")
    p.add_argument("--eval-prompts", type=int, default=None, help="held-out prompts per set (default all)")
    p.add_argument("--eval-max-new-tokens", type=int, default=None)
    p.add_argument("--seed", type=int, default=0)
    if kind == "peagle":
        p.add_argument("--cod-r", type=float, default=None, help="COD keep ratio per depth (default 0.7)")
        p.add_argument("--cod-r-min", type=float, default=None, help="COD minimum keep fraction (default 0.2)")
    p.add_argument("--eval-only", action="store_true",
                   help="re-measure the head already in --out and rewrite its training_log.json and model card")
    p.add_argument("--note", default=None,
                   help="with --eval-only: a remark on how the run was made, kept in the log and the model card")


def config_from_args(args: argparse.Namespace, kind: str) -> DrafterTrainConfig:
    overrides = {"target": args.target, "device": args.device, "k": args.k, "num_layers": args.num_layers,
                 "steps": args.steps, "time_budget_s": args.time_budget_s, "batch_size": args.batch_size,
                 "lr": args.lr, "n_sequences": args.n_sequences, "seq_len": args.seq_len,
                 "draft_vocab_size": args.draft_vocab_size, "data_cache": args.data_cache,
                 "eval_prompts": args.eval_prompts, "eval_max_new_tokens": args.eval_max_new_tokens, "seed": args.seed,
                 "intermediate_size": args.intermediate_size, "greedy_fraction": args.greedy_fraction,
                 "sample_temperature": args.sample_temperature,
                 "exclude_domains": tuple(args.exclude_domain) if args.exclude_domain else None,
                 "init_from": args.init_from, "val_prompts": args.val_prompts,
                 "cod_r": getattr(args, "cod_r", None), "cod_r_min": getattr(args, "cod_r_min", None)}
    if args.smoke:
        out = args.out or paths.repo_root() / "build" / "models" / f"tiny-{kind}-smoke"
        return DrafterTrainConfig.smoke_config(kind, out, **overrides)
    out = args.out or paths.models_dir() / f"tiny-{kind}"
    defaults = {"k": 8 if kind == "peagle" else 7}
    return DrafterTrainConfig(kind=kind, out=out, **{**defaults, **{k: v for k, v in overrides.items()
                                                                     if v is not None}})
