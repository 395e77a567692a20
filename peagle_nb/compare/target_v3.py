"""The family-v3 target against the tiny target and against its own targets, from recorded files only. Explained in
notebook 08 (section 7).

Two held-out sets: corpus v1's (the tiny target's own, kept held out by corpus v3; ``heldout`` in a target's
training log) and corpus v3's (``heldout_v3`` in the v3 log; the tiny target measured on the same windows by
``python -m peagle_nb.lab.benchmarks.heldout_v3``). The goals a v3 target is held to: bits per byte at most
``BPB_RATIO_GOAL`` of the tiny target's on every domain, and greedy continuations with at most
``LOOP_SHARE_GOAL`` of their tokens inside a repeated 8-gram.
"""

from __future__ import annotations

from collections.abc import Mapping

BPB_RATIO_GOAL = 0.7
LOOP_SHARE_GOAL = 0.15
# NVIDIA H200 datasheet: BF16 tensor core 1,979 TFLOP/s with 2:4 sparsity, so half of it dense
H200_DENSE_BF16_TFLOPS = 1979 / 2


def bits_per_byte_rows(v3_log: Mapping, tiny_log: Mapping, tiny_on_v3: Mapping | None = None) -> list[dict]:
    """Per held-out set and domain: the v3 target's bits per byte, the tiny target's, their ratio and whether it
    meets ``BPB_RATIO_GOAL``. The v1 set compares both targets' own logs; the v3 set needs ``tiny_on_v3``."""
    sets = [("v1 held-out", v3_log["heldout"], tiny_log["heldout"])]
    if tiny_on_v3 is not None and "heldout_v3" in v3_log:
        sets.append(("v3 held-out", v3_log["heldout_v3"], tiny_on_v3["heldout_v3"]))
    rows = []
    for name, v3, tiny in sets:
        for d, r in v3.items():
            ratio = r["bits_per_byte"] / tiny[d]["bits_per_byte"]
            rows.append({"held-out set": name, "domain": d, "v3 bits/byte": r["bits_per_byte"],
                         "tiny bits/byte": tiny[d]["bits_per_byte"], "ratio": ratio,
                         "meets goal": ratio <= BPB_RATIO_GOAL})
    return rows


def loop_rows(v3_log: Mapping, tiny_log: Mapping | None = None, v3_same_check: Mapping | None = None) -> list[dict]:
    """Per prompt set: the share of the v3 target's greedy and sampled (T=1) continuations inside a repeated 8-gram
    (its training log's check), whether greedy meets ``LOOP_SHARE_GOAL``, and, where given, the tiny target's greedy
    share and the v3 target's measured by the very same check (``v3_same_check``: both from
    ``lab.benchmarks.heldout_v3`` on one machine, so the two targets are compared like with like)."""
    tiny_cont = (tiny_log or {}).get("continuations", {})
    same_cont = (v3_same_check or {}).get("continuations", {})
    rows = []
    for name, r in v3_log["continuations"].items():
        greedy = r["greedy"]["repetition_fraction"]
        row = {"prompt set": name, "new tokens": r["max_new_tokens"], "greedy repeated": greedy,
               "sampled repeated": r["sampled"]["repetition_fraction"], "meets goal": greedy <= LOOP_SHARE_GOAL}
        if name in same_cont:
            row["v3 greedy repeated, same check"] = same_cont[name]["greedy"]["repetition_fraction"]
        if name in tiny_cont:
            row["tiny greedy repeated, same check"] = tiny_cont[name]["greedy"]["repetition_fraction"]
        rows.append(row)
    return rows


def training_flops_per_token(params: int, layers: int, seq_len: int, hidden: int) -> float:
    """Training FLOPs per token: 6 per parameter (forward and backward) plus attention over the context,
    6 x layers x context x width (the usual transformer estimate)."""
    return 6 * params + 6 * layers * seq_len * hidden


def training_facts(v3_log: Mapping) -> dict:
    """What the run was: layers, parameters, tokens seen, seconds, throughput, the model FLOP/s that throughput
    means and its share of an H200's dense BF16 peak, the domain mix and the device."""
    tokens_per_s = v3_log["tokens_seen"] / v3_log["train_seconds"]
    per_token = training_flops_per_token(v3_log["params"], v3_log["layers"], v3_log["config"]["seq_len"],
                                         v3_log["hidden_size"])
    tflops = per_token * tokens_per_s / 1e12
    return {"model_tflops_per_s": tflops, "h200_peak_share": tflops / H200_DENSE_BF16_TFLOPS,
            "layers": v3_log["layers"], "hidden_size": v3_log["hidden_size"], "params_m": v3_log["params"] / 1e6,
            "tokens_seen_m": v3_log["tokens_seen"] / 1e6, "train_seconds": v3_log["train_seconds"],
            "tokens_per_s": tokens_per_s, "steps": v3_log["steps_run"],
            "best_step": v3_log["best_step"], "device": v3_log["device"],
            "train_tokens_m": {d: n / 1e6 for d, n in v3_log["train_tokens"].items()},
            "domain_sampling": v3_log.get("domain_sampling")}


def loop_temperature_rows(doc: Mapping) -> list[dict]:
    """``lab.benchmarks.loops_by_temperature``'s file -> one row per target and temperature: the share of its own
    continuations inside a repeated 8-gram on each held-out prompt set, and whether every set meets
    ``LOOP_SHARE_GOAL``."""
    rows = []
    for name, r in doc["targets"].items():
        for t, shares in r["repeated_share"].items():
            rows.append({"target": name, "temperature": float(t), **shares,
                         "meets goal": all(v <= LOOP_SHARE_GOAL for v in shares.values())})
    return rows


def coolest_fresh_temperature(doc: Mapping, target: str) -> float | None:
    """The lowest measured temperature from which on ``target``'s own text meets ``LOOP_SHARE_GOAL`` on every set
    (it and every hotter one measured), or None when even the hottest loops more."""
    rows = sorted((r for r in loop_temperature_rows(doc) if r["target"] == target), key=lambda r: r["temperature"])
    coolest = None
    for r in reversed(rows):
        if not r["meets goal"]:
            break
        coolest = r["temperature"]
    return coolest


# The cost goals for a deep target: one drafter pass as a share of one target step (batch 1, greedy)
PEAGLE_PASS_GOAL = 0.2  # a 4-layer P-EAGLE pass
EAGLE3_PASS_GOAL = 0.06  # a 1-layer EAGLE-3 pass


def pass_cost_prediction(engine_doc: Mapping, target_layers: int, deep_layers: int) -> dict:
    """How much a drafter pass will cost beside a ``deep_layers`` target step, predicted from one H200 engine file of
    the tiny family (``phases``: greedy, batch 1). On the H200 a pass is launch-bound: each layer is the same six
    kernels whatever the model, so pass time is ``fixed + per_layer x layers``. The line is fitted to the two heads'
    single passes (EAGLE-3 at K=1, P-EAGLE at K=1; their layer counts from the file) and checked on a point it was not
    fitted to: the tiny target's plain step (``target_layers``). Every layer here is 256 wide with a 640-wide MLP,
    the v3 target's shape too."""
    ph = {(p["method"], p["k"]): p for p in engine_doc["phases"] if p["mode"] == "greedy"}
    heads = engine_doc["model"]["heads"]
    (x1, y1), (x2, y2) = ((heads[m]["layers"], ph[(m, 1)]["draft_ms"]) for m in ("eagle3", "peagle"))
    per_layer = (y2 - y1) / (x2 - x1)
    fixed = y1 - per_layer * x1
    check_pred, check_meas = fixed + per_layer * target_layers, ph[("none", 0)]["plain_ms"]
    deep_step = fixed + per_layer * deep_layers
    ratios = {m: ph[(m, 1)]["draft_ms"] / deep_step for m in ("eagle3", "peagle")}
    return {"fixed_ms": fixed, "per_layer_ms": per_layer, "check": {"layers": target_layers,
                                                                    "predicted_ms": check_pred,
                                                                    "measured_ms": check_meas,
                                                                    "error": check_pred / check_meas - 1},
            "deep_layers": deep_layers, "deep_step_ms": deep_step, "pass_ratio": ratios,
            "goal": {"eagle3": EAGLE3_PASS_GOAL, "peagle": PEAGLE_PASS_GOAL},
            "meets_goal": {"eagle3": ratios["eagle3"] <= EAGLE3_PASS_GOAL,
                           "peagle": ratios["peagle"] <= PEAGLE_PASS_GOAL},
            "tiny_ratio": {m: ph[(m, 1)]["draft_ms"] / check_meas for m in ("eagle3", "peagle")}}


def _validation_at(log: Mapping) -> dict[int, dict]:
    return {h["step"]: h["validation_loss"] for h in log["history"] if "validation_loss" in h}


def retraining_check(recorded: Mapping, rerun: Mapping) -> dict:
    """A re-training of the v3 target (``rerun``'s training log) against the recorded one's card: per domain the
    held-out bits per byte of both, their difference and the card's tolerance (``target_card.retrain_tolerance``);
    the steps each run reached in its time budget; and the validation loss of both at the last step both logged,
    in bits per byte (``equal-step gap``), which tells a different curve from the same curve stopped at another
    step. Explained in notebook 08 (section 7)."""
    from peagle_nb.training.target_card import retrain_tolerance

    if recorded["config"]["arch"] != rerun["config"]["arch"]:
        raise ValueError("the re-training has another architecture than the recorded target: compare like with like")
    tol = retrain_tolerance(recorded)
    val_a, val_b = _validation_at(recorded), _validation_at(rerun)
    shared = max(set(val_a) & set(val_b))
    rows = []
    for d, t in tol.items():
        a, b = recorded["heldout"][d]["bits_per_byte"], rerun["heldout"][d]["bits_per_byte"]
        per_nat = a / recorded["heldout_loss"][d]  # bits per byte per nat per token, this domain's held-out text
        rows.append({"domain": d, "recorded bits/byte": a, "re-trained bits/byte": b, "difference": b - a,
                     "tolerance": t, "within": abs(b - a) <= t,
                     "equal-step gap": (val_b[shared][d] - val_a[shared][d]) * per_nat})
    equal_step_gap = max(abs(r["equal-step gap"]) for r in rows)
    return {"rows": rows, "recorded_device": recorded["device"], "rerun_device": rerun["device"],
            "recorded_steps": recorded["steps_run"], "rerun_steps": rerun["steps_run"],
            "steps_ratio": rerun["steps_run"] / recorded["steps_run"], "shared_step": shared,
            "within_all": all(r["within"] for r in rows), "equal_step_gap_max": equal_step_gap,
            "equal_step_within_all": all(abs(r["equal-step gap"]) <= r["tolerance"] for r in rows)}
