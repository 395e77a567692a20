"""Where one training step of the v3 draft-head pair spends its time, phase by phase, on a GPU.
Named by notebook 08 (family v3: what a rung above 10 costs; the H100 record:
data/results/family_v3/head_train_step_h100.json). On a GPU:

    python -m peagle_nb.lab.benchmarks.head_train_step --device cuda \\
        --target-config data/results/family_v3/target_h100_rerun/config.json \\
        --seq-lens 256,512 --out data/results/family_v3/head_train_step_h100.json

The step is the one ``training.drafter_train`` runs for the budget ladder (batch 64, draft vocabulary 4096,
EAGLE-3 k=7 with one layer, P-EAGLE k=8 with four): the target as teacher (its features and soft labels, fp32,
``TargetTeacher``), the method's loss under bf16 autocast (``eagle3.ttt_loss``, ``peagle.cod_loss``), backward,
gradient clipping and AdamW. Each phase is timed alone (CUDA synchronised before and after it), over ``--steps``
steps after ``--warmup``; the record keeps every step's times, so p10/median/p90 come from the raw data.

The target is the v3 architecture with random weights: a step's time depends on shapes, not on what the weights
hold (the COD layout is drawn from the same generator either way). Two variants of the teacher are timed beside
the training's own (fp32): TF32 matrix products, and bf16 autocast; each records how far its features and soft
labels move from fp32 (largest absolute difference), the price of taking it. Last, the ladder's pair step (both
heads) as trained today (each head's own teacher) and as it could be (one teacher for both, TF32 or not on CUDA),
the variants interleaved over ``--pair-rounds`` rounds: each round gives one paired speed-up.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import torch

from peagle_nb.lab.benchmarks.generate_bench import timed_call
from peagle_nb.training.drafter_config import DrafterTrainConfig
from peagle_nb.training.drafter_data import TargetTeacher

PHASES = ("teacher", "forward", "backward", "optimizer")
HEADS = {"eagle3": {"num_layers": 1, "k": 7}, "peagle": {"num_layers": 4, "k": 8}}


def random_target(config_path: Path, device: torch.device):
    """The target architecture of ``config_path`` with seeded random weights, fp32, eval mode."""
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(**{k: v for k, v in json.loads(Path(config_path).read_text()).items()
                         if k not in ("architectures", "transformers_version", "dtype")})
    torch.manual_seed(0)
    return LlamaForCausalLM(cfg).to(device).eval().requires_grad_(False)


def make_pair_head(kind: str, target, draft_vocab_size: int):
    """A head of the ladder's shape for ``target``, warm-started from it (``training.head_init`` without a tokenizer:
    the mask token is the last id, which changes no cost)."""
    from peagle_nb.models.heads import DraftHead, config_for_target, init_from_target

    spec = HEADS[kind]
    hcfg = config_for_target(target.config, kind, num_layers=spec["num_layers"], draft_vocab_size=draft_vocab_size,
                             mask_token_id=target.config.vocab_size - 1 if kind == "peagle" else None,
                             trained_k=spec["k"])
    torch.manual_seed(0)
    head = DraftHead(hcfg)
    head.set_draft_vocab(torch.arange(draft_vocab_size))
    init_from_target(head, target)
    if kind == "eagle3":
        head.embed_tokens.weight.requires_grad_(False)
    return head


def _timed(fn, device: torch.device):
    out, seconds = timed_call(fn, device)
    return out, seconds * 1000.0


def time_steps(kind: str, target, tokens: torch.Tensor, cfg: DrafterTrainConfig, steps: int, warmup: int,
               device: torch.device, top_ops: int = 15) -> dict:
    """Per-phase milliseconds of ``warmup + steps`` training steps of one head (the warm-up steps are dropped),
    and one profiled step's ``top_ops`` operations by self time."""
    from peagle_nb.training.eagle3 import ttt_loss
    from peagle_nb.training.peagle import cod_loss

    tokens = tokens.to(device)  # as training holds its data: a CUDA index cannot index a CPU tensor
    head = make_pair_head(kind, target, cfg.draft_vocab_size).to(device).train()
    teacher = TargetTeacher(target, head.aux_layer_ids, head.target_to_draft_ids())
    params = [p for p in head.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=cfg.lr, betas=(0.9, 0.95))
    loss_fn = ttt_loss if kind == "eagle3" else cod_loss
    gen = torch.Generator().manual_seed(0)
    times = {p: [] for p in PHASES}
    for step in range(warmup + steps):
        idx = torch.randint(0, tokens.shape[0], (cfg.batch_size,), generator=gen)
        batch, t_teacher = _timed(lambda: teacher(tokens[idx.to(device)]), device)

        def fwd():
            with torch.autocast(device.type, dtype=torch.bfloat16, enabled=device.type == "cuda"):
                return loss_fn(head, batch, cfg, gen)[0]

        loss, t_fwd = _timed(fwd, device)
        opt.zero_grad(set_to_none=True)
        _, t_bwd = _timed(loss.backward, device)

        def update():
            torch.nn.utils.clip_grad_norm_(params, cfg.grad_clip)
            opt.step()

        _, t_opt = _timed(update, device)
        if step >= warmup:
            for p, t in zip(PHASES, (t_teacher, t_fwd, t_bwd, t_opt)):
                times[p].append(round(t, 3))
    peak = torch.cuda.max_memory_allocated() / 2**30 if device.type == "cuda" else None
    # one more step under the profiler: which operations the step's time goes to (self time on the device)
    from torch.profiler import ProfilerActivity, profile

    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    with profile(activities=acts) as prof:
        batch = teacher(tokens[:cfg.batch_size].to(device))
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=device.type == "cuda"):
            loss = loss_fn(head, batch, cfg, gen)[0]
        loss.backward()
        opt.step()
        if device.type == "cuda":
            torch.cuda.synchronize()
    attr = "self_device_time_total" if device.type == "cuda" else "self_cpu_time_total"
    events = sorted(prof.key_averages(), key=lambda e: getattr(e, attr), reverse=True)
    total = sum(getattr(e, attr) for e in events) / 1000.0
    top = [{"op": e.key, "ms": round(getattr(e, attr) / 1000.0, 3), "calls": e.count} for e in events[:top_ops]]
    return {"ms": times, "peak_memory_gib": None if peak is None else round(peak, 2),
            "profile": {"self_time_ms_total": round(total, 3), "top_ops": top,
                        "kernel_launches": sum(e.count for e in events if e.device_type.name == "CUDA")}}


def teacher_variants(target, tokens: torch.Tensor, draft_vocab_size: int, batch_size: int, reps: int,
                     device: torch.device) -> list[dict]:
    """The teacher's time in fp32 (as trained), with TF32 products, and under bf16 autocast; how far each moves the
    features and soft labels from fp32."""
    teacher = TargetTeacher(target, make_pair_head("peagle", target, draft_vocab_size).aux_layer_ids,
                            torch.arange(draft_vocab_size))
    x = tokens[:batch_size].to(device)
    ref = teacher(x)
    out = []
    for name in ("fp32", "tf32", "bf16_autocast"):
        torch.backends.cuda.matmul.allow_tf32 = name == "tf32"
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=name == "bf16_autocast"):
            ms = [_timed(lambda: teacher(x), device)[1] for _ in range(reps + 2)][2:]
            got = teacher(x)
        out.append({"variant": name, "ms": [round(t, 3) for t in ms],
                    "features_max_abs_diff": float((got["features"] - ref["features"]).abs().max()),
                    "logits_max_abs_diff": float((got["logits"] - ref["logits"]).abs().max()),
                    "argmax_agreement": float((got["argmax"] == ref["argmax"]).float().mean())})
    torch.backends.cuda.matmul.allow_tf32 = False
    return out


def time_pair_steps(target, tokens: torch.Tensor, cfgs: dict[str, DrafterTrainConfig], steps: int, warmup: int,
                    device: torch.device, *, shared: bool, tf32: bool) -> list[float]:
    """Milliseconds of ``steps`` steps of the ladder's pair (both heads, one training step each, the trainer's own
    ``drafter_train.HeadRun.step``; ``warmup`` more dropped). ``shared=False`` is today's training: each head's
    process runs its own teacher on its batch (two lockstep processes on one GPU take about the serial sum: notebook
    08 checks it against the recorded rates); ``shared=True`` runs the teacher once and feeds both heads the same
    batch, as ``peagle-nb train pair`` does. ``tf32`` lets fp32 matrix products (the teacher's) use TF32."""
    from peagle_nb.training.drafter_train import HeadRun
    from peagle_nb.training.eagle3 import ttt_loss
    from peagle_nb.training.peagle import cod_loss

    tokens = tokens.to(device)
    losses = {"eagle3": ttt_loss, "peagle": cod_loss}
    runs = {k: HeadRun(c, losses[k], make_pair_head(k, target, c.draft_vocab_size).to(device).train(), "")
            for k, c in cfgs.items()}
    teachers = {k: TargetTeacher(target, r.head.aux_layer_ids, r.head.target_to_draft_ids()) for k, r in runs.items()}
    first = next(iter(runs))

    def pair_step(x: torch.Tensor, step: int) -> None:
        batch = teachers[first](x) if shared else None
        for k, run in runs.items():
            run.step(batch if shared else teachers[k](x), step, step / cfgs[k].steps, device, 0.0)

    before = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = tf32
    try:
        ms = []
        gen = runs[first].gen
        for step in range(warmup + steps):
            idx = torch.randint(0, tokens.shape[0], (cfgs[first].batch_size,), generator=gen)
            ms.append(round(_timed(lambda: pair_step(tokens[idx.to(device)], step), device)[1], 3))
    finally:
        torch.backends.cuda.matmul.allow_tf32 = before
    return ms[warmup:]


PAIR_VARIANTS = (("separate", False), ("separate", True), ("shared", False), ("shared", True))  # (teacher, tf32)


def pair_variants(device: torch.device) -> tuple[tuple[str, bool], ...]:
    """The pair's variants worth timing here: TF32 exists on CUDA only (on a CPU it would time fp32 twice)."""
    return PAIR_VARIANTS if device.type == "cuda" else tuple(v for v in PAIR_VARIANTS if not v[1])


def time_pair_rounds(target, tokens: torch.Tensor, cfgs: dict[str, DrafterTrainConfig], steps: int, warmup: int,
                     device: torch.device, rounds: int) -> list[dict]:
    """Each variant of ``pair_variants`` timed in ``rounds`` rounds, interleaved (round r starts at variant r, so
    none always runs first, when a machine is coldest): a machine's drift moves every variant of a round alike,
    and each round gives one paired ratio. Per variant: every step's ms and each round's median."""
    variants = pair_variants(device)
    out = [{"teacher": t, "tf32": tf32, "ms": [], "round_medians_ms": []} for t, tf32 in variants]
    for r in range(rounds):
        for i in [(r + j) % len(variants) for j in range(len(variants))]:
            ms = time_pair_steps(target, tokens, cfgs, steps, warmup, device, shared=variants[i][0] == "shared",
                                 tf32=variants[i][1])
            out[i]["ms"] += ms
            out[i]["round_medians_ms"].append(_pct(ms, 0.5))
    return out


def pair_speedups(variant: dict, base: dict) -> list[float]:
    """Per round: the base variant's median step over this variant's (paired within the round)."""
    return [b / v for b, v in zip(base["round_medians_ms"], variant["round_medians_ms"])]


def _pct(values: list[float], q: float) -> float:
    v = sorted(values)
    return v[min(len(v) - 1, int(q * len(v)))]


def summarize(doc: dict) -> list[dict]:
    """One row per (sequence length, head): each phase's median ms, the step's p10/median/p90 (phases summed step by
    step) and each phase's share of the median step; the teacher variants' medians beside fp32; and the pair's
    step in each variant (p10/median/p90, steps/s, speed-up over today's separate fp32 teachers)."""
    rows = []
    for run in doc["runs"]:
        if run.get("measures") == "training step":
            ms = run["ms"]
            steps = [sum(vals) for vals in zip(*(ms[p] for p in PHASES))]
            med = {p: _pct(ms[p], 0.5) for p in PHASES}
            rows.append({"seq_len": run["seq_len"], "method": run["method"], **{f"{p}_ms": med[p] for p in PHASES},
                         "step_p10_ms": _pct(steps, 0.1), "step_ms": _pct(steps, 0.5), "step_p90_ms": _pct(steps, 0.9),
                         **{f"{p}_share": med[p] / sum(med.values()) for p in PHASES},
                         "peak_memory_gib": run["peak_memory_gib"],
                         "top_op": run["profile"]["top_ops"][0]["op"] if run["profile"]["top_ops"] else None})
        elif run.get("measures") == "pair step":
            for v in run["variants"]:
                med = _pct(v["ms"], 0.5)
                ratios = pair_speedups(v, run["variants"][0])
                rows.append({"seq_len": run["seq_len"], "method": f"pair, {v['teacher']} teacher"
                             + (", TF32" if v["tf32"] else ", fp32"),
                             "step_p10_ms": _pct(v["ms"], 0.1), "step_ms": med, "step_p90_ms": _pct(v["ms"], 0.9),
                             "pair_steps_per_s": 1000.0 / med, "speedup": _pct(ratios, 0.5),
                             "speedup_min": min(ratios), "speedup_max": max(ratios), "rounds": len(ratios)})
        elif run.get("measures") == "teacher variants":
            base = _pct(run["variants"][0]["ms"], 0.5)
            for v in run["variants"]:
                rows.append({"seq_len": run["seq_len"], "method": f"teacher {v['variant']}",
                             "teacher_ms": _pct(v["ms"], 0.5), "over_fp32": _pct(v["ms"], 0.5) / base,
                             "features_max_abs_diff": v["features_max_abs_diff"],
                             "argmax_agreement": v["argmax_agreement"]})
    return rows


def pair_costs(doc: dict, lockstep_steps_per_s: dict[int, float]) -> list[dict]:
    """Per sequence length: the ladder's pair step as the sum of its two heads' median steps (one GPU runs the two
    lockstep processes one kernel stream after the other), checked against the rate a recorded lockstep pair ran
    at that length (``lockstep_steps_per_s``, from the heads records); then what one teacher for both heads would
    save, and one TF32 teacher, estimated from the measured phases (a step less one fp32 teacher call, or less both
    plus one TF32 call) and scaled to the recorded rate. Where the record timed the pair itself (``pair step``),
    the measured speed-up stands beside each estimate: the median of the rounds' paired ratios, and their range."""
    med = {(r["seq_len"], r["method"]): {p: _pct(r["ms"][p], 0.5) for p in PHASES}
           for r in doc["runs"] if r.get("measures") == "training step"}
    tf32 = {r["seq_len"]: _pct(next(v for v in r["variants"] if v["variant"] == "tf32")["ms"], 0.5)
            for r in doc["runs"] if r.get("measures") == "teacher variants"}
    measured = {}  # (seq_len, teacher, tf32) -> the per-round speed-ups over separate fp32 teachers
    for r in doc["runs"]:
        if r.get("measures") == "pair step":
            measured.update({(r["seq_len"], v["teacher"], v["tf32"]): pair_speedups(v, r["variants"][0])
                             for v in r["variants"]})
    rows = []
    for seq_len in sorted({L for L, _ in med}):
        heads = [med[(seq_len, k)] for k in HEADS]
        serial = sum(sum(h.values()) for h in heads)
        one_teacher = serial - max(h["teacher"] for h in heads)
        one_tf32 = serial - sum(h["teacher"] for h in heads) + tf32[seq_len]
        rate = lockstep_steps_per_s.get(seq_len)
        row = {"seq_len": seq_len, "pair step ms (sum of heads)": serial, "serial-sum steps/s": 1000.0 / serial,
               "recorded lockstep steps/s": rate,
               "recorded / serial-sum": None if rate is None else rate * serial / 1000,
               "teacher share": sum(h["teacher"] for h in heads) / serial,
               "one teacher: speed-up (estimate)": serial / one_teacher,
               "one TF32 teacher: speed-up (estimate)": serial / one_tf32,
               "rounds measured": len(measured.get((seq_len, "shared", False), []))}
        for name, tf32_on in (("one teacher", False), ("one TF32 teacher", True)):
            got = measured.get((seq_len, "shared", tf32_on))
            row[f"{name}: speed-up (measured)"] = _pct(got, 0.5) if got else None
            row[f"{name}: speed-up (measured, min)"] = min(got) if got else None
            row[f"{name}: speed-up (measured, max)"] = max(got) if got else None
        row["one TF32 teacher: steps/s (estimate)"] = None if rate is None else rate * serial / one_tf32
        rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> int:
    from peagle_nb.files.results import make_results, write_results

    p = argparse.ArgumentParser(prog="python -m peagle_nb.lab.benchmarks.head_train_step", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--target-config", type=Path,
                   default=Path("data/results/family_v3/target_h100_rerun/config.json"))
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--seq-lens", default="256,512")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--draft-vocab-size", type=int, default=4096)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--pair-rounds", type=int, default=3, help="interleaved rounds of the pair's variants")
    p.add_argument("--out", type=Path, required=True)
    args = p.parse_args(argv)
    device = torch.device(args.device)
    target = random_target(args.target_config, device)
    runs = []
    for seq_len in (int(s) for s in args.seq_lens.split(",")):
        torch.manual_seed(seq_len)
        tokens = torch.randint(2, target.config.vocab_size - 1, (4 * args.batch_size, seq_len))
        for kind, spec in HEADS.items():
            cfg = DrafterTrainConfig(kind=kind, out=Path("unused"), k=spec["k"], batch_size=args.batch_size,
                                     draft_vocab_size=args.draft_vocab_size, seq_len=seq_len)
            if device.type == "cuda":
                torch.cuda.reset_peak_memory_stats()
            r = time_steps(kind, target, tokens, cfg, args.steps, args.warmup, device)
            med = {ph: sorted(v)[len(v) // 2] for ph, v in r["ms"].items()}
            print(f"L={seq_len} {kind}: median ms " + ", ".join(f"{ph} {m:.1f}" for ph, m in med.items())
                  + f"; step {sum(med.values()):.1f}", flush=True)
            print("  top ops: " + "; ".join(f"{o['op']} {o['ms']:.1f} ms x{o['calls']}"
                                            for o in r["profile"]["top_ops"][:6]), flush=True)
            runs.append({"seq_len": seq_len, "measures": "training step", "method": kind,
                         "batch_size": args.batch_size, **spec, **r})
        variants = teacher_variants(target, tokens, args.draft_vocab_size, args.batch_size, args.steps, device)
        for v in variants:
            print(f"L={seq_len} teacher {v['variant']}: median {sorted(v['ms'])[len(v['ms']) // 2]:.1f} ms, "
                  f"features moved {v['features_max_abs_diff']:.2e}, argmax agreement {v['argmax_agreement']:.4f}")
        runs.append({"seq_len": seq_len, "measures": "teacher variants", "batch_size": args.batch_size,
                     "variants": variants})
        cfgs = {kind: DrafterTrainConfig(kind=kind, out=Path("unused"), k=spec["k"], batch_size=args.batch_size,
                                         draft_vocab_size=args.draft_vocab_size, seq_len=seq_len)
                for kind, spec in HEADS.items()}
        pair = time_pair_rounds(target, tokens, cfgs, args.steps, args.warmup, device, args.pair_rounds)
        for v in pair:
            ratios = pair_speedups(v, pair[0])
            print(f"L={seq_len} pair, {v['teacher']} teacher{', TF32' if v['tf32'] else ''}: median "
                  f"{_pct(v['ms'], 0.5):.1f} ms; x{_pct(ratios, 0.5):.3f} [{min(ratios):.3f}-{max(ratios):.3f}] "
                  f"over {len(ratios)} rounds", flush=True)
        runs.append({"seq_len": seq_len, "measures": "pair step", "batch_size": args.batch_size,
                     "rounds": args.pair_rounds, "variants": pair})
    doc = make_results("engine", runs, model={"target_config": str(args.target_config),
                                                       "weights": "random (seed 0): shapes decide the time"},
                       notes=f"{args.steps} timed steps after {args.warmup} warm-up steps per head")
    write_results(args.out, doc)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
