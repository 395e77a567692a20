"""The family-v3 heads and their H200 regime map against the issue's goals, from recorded files only. Explained in
notebook 08 (section 7).

Inputs: the heads command's summary (``family_v3/heads_h200/family_heads.json``: every head's held-out acceptance
per depth and conditional on the depth before, its steps and weights) and the engine record of the v3 target with
the rung-3 pair (``family_v3/engine_h200_v3.json.gz``: step phases, regimes with TTFT / TPOT and tau on fresh text);
the rung-10 pair's own heads run and sweep (``family_v3/heads_h200_r10/``, ``family_v3/engine_h200_v3_r10.json.gz``),
read beside them as one ladder (:func:`merged_heads`) and one map per rung (:func:`rung_rows`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from peagle_nb.analysis import step_phases
from peagle_nb.compare.target_v3 import EAGLE3_PASS_GOAL, PEAGLE_PASS_GOAL

CONDITIONAL_GOAL = 0.6  # P-EAGLE's acceptance at depth d given d-1 accepted, depths 2-4, T <= 0.7
GOAL_MAX_TEMPERATURE = 0.7  # the conditional goal holds at T <= 0.7
GOAL_DEPTHS = (2, 3, 4)
SPEED_RATIO_GOAL = 1.10  # P-EAGLE / EAGLE-3 at each one's best K, TPOT and end to end, 256+ tokens
PLAIN_SPEEDUP_GOAL = 1.5  # both heads over plain decoding
DOMAINS = ("prose", "code", "ja")
HEADS_RECORDS = ("heads_h200", "heads_h200_r10")  # folders under family_v3/: rungs 1 and 3 with the ablations, then
# the rung-10 pair alone (the two runs trained on the same data: :func:`merged_heads` checks it)
TIMING_KEYS = ("generate_seconds", "build_seconds")  # what may differ between two builds of the same data


def merged_heads(docs: Sequence[Mapping]) -> dict:
    """One heads document from several runs of the heads command: every head by name, each tagged with its run's
    index (``run``), and the runs' steps per pair. The runs must have trained on the same data from the same target
    (a ladder compares budgets, nothing else): a difference is an error that names the field."""
    first = docs[0]
    same = {k: v for k, v in first["data"].items() if k not in TIMING_KEYS}
    heads, pair_steps = {}, {}
    for i, doc in enumerate(docs):
        if doc["target_weights_sha256"] != first["target_weights_sha256"]:
            raise ValueError(f"heads run {i} was trained on another target than run 0: a ladder needs one target")
        data = {k: v for k, v in doc["data"].items() if k not in TIMING_KEYS}
        diff = sorted(k for k in set(same) | set(data) if data.get(k) != same.get(k))
        if diff:
            raise ValueError(f"heads run {i} trained on other data than run 0 (differs in {', '.join(diff)}): "
                             "a ladder compares budgets on the same data")
        for name, h in doc["heads"].items():
            if name in heads:
                raise ValueError(f"head {name} is in two heads runs: keep one")
            heads[name] = {**h, "run": i}
        pair_steps.update(doc.get("pair_steps_run", {}))
    return {**first, "heads": heads, "pair_steps_run": pair_steps, "runs": len(docs)}


def conditional_rows(heads_doc: Mapping) -> list[dict]:
    """One row per head and held-out domain: tau at the head's K and the conditional acceptance at depths 1-4; for
    P-EAGLE heads the weakest of depths 2-4 against the goal."""
    rows = []
    for name, h in heads_doc["heads"].items():
        for d in DOMAINS:
            acc = h["acceptance"][d]
            cond = acc["conditional"]
            row = {"head": name, "domain": d, "k": acc["k"], "tau": acc["tau"],
                   **{f"depth {i + 1}": cond[i] for i in range(4)}}
            deep = [cond[i - 1] for i in GOAL_DEPTHS if cond[i - 1] is not None]
            row["weakest 2-4"] = min(deep) if deep else None
            row["meets goal"] = h["kind"] == "peagle" and bool(deep) and min(deep) >= CONDITIONAL_GOAL
            rows.append(row)
    return rows


def ladder_rows(heads_doc: Mapping) -> list[dict]:
    """The budget ladder: per method and rung, the steps its training ran (the time budget can stop a rung short of
    its cap) and the held-out tau per domain."""
    rows = []
    for name, h in heads_doc["heads"].items():
        if name.count("-") != 2:  # v3-<method>-r<rung>: the pair; ablations carry one more part
            continue
        _, method, rung = name.split("-")
        rows.append({"method": method, "rung": rung, "steps cap": h["steps_cap"], "steps run": h["steps_run"],
                     "train s": h["train_seconds"], **{f"tau {d}": h["acceptance"][d]["tau"] for d in DOMAINS}})
    return sorted(rows, key=lambda r: (r["method"], float(r["rung"][1:])))


def ladder_extrapolation(heads_doc: Mapping, fit: tuple[str, str] = ("r1", "r3"), check: str = "r10") -> list[dict]:
    """Can the ladder say how much budget P-EAGLE needs? Per method and domain: the line tau = a + b ln(steps run)
    through the ``fit`` rungs, its prediction at the ``check`` rung's steps, and the measured tau there (the check is
    a point the line never saw); then P-EAGLE / EAGLE-3 on tau at each rung."""
    rows = ladder_rows(heads_doc)
    at = {(r["method"], r["rung"]): r for r in rows}
    out = []
    for method in ("eagle3", "peagle"):
        (lo, hi), c = (at[(method, f)] for f in fit), at[(method, check)]
        for d in DOMAINS:
            slope = (hi[f"tau {d}"] - lo[f"tau {d}"]) / math.log(hi["steps run"] / lo["steps run"])
            pred = hi[f"tau {d}"] + slope * math.log(c["steps run"] / hi["steps run"])
            out.append({"method": method, "domain": d, "slope per e-fold of steps": slope,
                        **{f"tau {r}": at[(method, r)][f"tau {d}"] for r in (*fit, check)},
                        f"predicted {check}": pred, "error": pred - c[f"tau {d}"]})
    for d in DOMAINS:
        out.append({"method": "peagle / eagle3", "domain": d,
                    **{f"tau {r}": at[("peagle", r)][f"tau {d}"] / at[("eagle3", r)][f"tau {d}"]
                       for r in (*fit, check)}})
    return out


def pair_rows(heads_docs: Mapping[str, Mapping], rung: str = "r3") -> list[dict]:
    """One rung's pair from several heads runs side by side ({label: heads command summary}), per held-out domain:
    each method's steps and tau at its K, P-EAGLE / EAGLE-3 on tau, and P-EAGLE's weakest conditional acceptance at
    depths 2-4. Runs on different targets are compared as runs of one recipe, not as one ladder (each row names its
    target's weights)."""
    rows = []
    for label, doc in heads_docs.items():
        e3, pe = doc["heads"][f"v3-eagle3-{rung}"], doc["heads"][f"v3-peagle-{rung}"]
        for d in DOMAINS:
            cond = pe["acceptance"][d]["conditional"]
            rows.append({"run": label, "domain": d, "target sha256": doc["target_weights_sha256"][
                             sorted(doc["target_weights_sha256"])[0]][:12],
                         "eagle3 steps": e3["steps_run"], "peagle steps": pe["steps_run"],
                         "eagle3 tau": e3["acceptance"][d]["tau"], "peagle tau": pe["acceptance"][d]["tau"],
                         "p_over_e_tau": pe["acceptance"][d]["tau"] / e3["acceptance"][d]["tau"],
                         "peagle weakest 2-4": min(cond[i - 1] for i in GOAL_DEPTHS)})
    return rows


def ablation_rows(heads_doc: Mapping, rung: str = "r3") -> list[dict]:
    """P-EAGLE at ``rung`` beside its ablations (same data, same time budget): steps run, tau per domain and its
    change from the full recipe."""
    heads = heads_doc["heads"]
    base = heads[f"v3-peagle-{rung}"]
    rows = []
    for name, h in heads.items():
        if not (name.startswith("v3-peagle") and name.endswith(rung)):
            continue
        variant = name[len("v3-peagle-"):-len(rung)].strip("-") or "full recipe"
        row = {"variant": variant, "layers": h["layers"], "steps run": h["steps_run"]}
        for d in DOMAINS:
            tau = h["acceptance"][d]["tau"]
            row[f"tau {d}"] = tau
            row[f"vs full {d}"] = tau / base["acceptance"][d]["tau"] - 1
        rows.append(row)
    return rows


def measured_pass_costs(engine_doc: Mapping, prediction: Mapping | None = None) -> dict:
    """One drafter pass (K=1, greedy, CUDA-graph device time) over one plain target step, measured on the v3 target;
    beside the goals and, when given, the tiny family's prediction (``target_v3.pass_cost_prediction``), which was
    fitted to other points: this checks it."""
    ph = {(p["method"], p["k"]): p for p in engine_doc["phases"] if p["mode"] == "greedy"}
    step = ph[("none", 0)]["plain_ms"]
    out: dict = {"target_step_ms": step}
    for m, goal in (("eagle3", EAGLE3_PASS_GOAL), ("peagle", PEAGLE_PASS_GOAL)):
        ratio = ph[(m, 1)]["draft_ms"] / step
        out[m] = {"pass_ms": ph[(m, 1)]["draft_ms"], "ratio": ratio, "goal": goal, "meets goal": ratio <= goal,
                  "k7_over_k1": ph[(m, 7)]["draft_ms"] / ph[(m, 1)]["draft_ms"]}
        if prediction is not None:
            out[m]["predicted_ratio"] = prediction["pass_ratio"][m]
            out[m]["prediction_error"] = prediction["pass_ratio"][m] / ratio - 1
    if prediction is not None:
        out["predicted_step_ms"] = prediction["deep_step_ms"]
        out["step_prediction_error"] = prediction["deep_step_ms"] / step - 1
    return out


def regime_table(engine_doc: Mapping) -> list[dict]:
    """``step_phases.regime_rows`` with each point's completed sweeps and tau on fresh (non-repeated) text at K=7
    beside tau, so a tau earned by copying loops shows."""
    summaries = {(r["temperature"], r["max_new_tokens"]): r["summary"] for r in engine_doc["regimes"]}
    out = []
    for row in step_phases.regime_rows(engine_doc):
        s = summaries[(row["temperature"], row["tokens"])][row["prompt_set"]]
        out.append({**row, "sweeps": s.get("sweeps"), "repetition_k7": s.get("peagle.k7.repetition_fraction"),
                    "eagle3_tau_fresh_k7": s.get("eagle3.k7.tau_fresh"),
                    "peagle_tau_fresh_k7": s.get("peagle.k7.tau_fresh")})
    return out


def speed_goal(engine_doc: Mapping, min_tokens: int = 256, by_length: bool = False) -> dict:
    """The issue's speed goal at every measured temperature over ``min_tokens``+ tokens: P-EAGLE at least
    ``SPEED_RATIO_GOAL`` x EAGLE-3 on TPOT and end to end on at least 2 sets, both heads ``PLAIN_SPEEDUP_GOAL`` x
    plain decoding (TPOT). With ``by_length`` each (temperature, length) is judged on its own (a record with 256 and
    512 tokens would otherwise count a set twice)."""
    out = {}
    table = regime_table(engine_doc)
    keys = sorted({(r["temperature"], r["tokens"]) if by_length else r["temperature"]
                   for r in table if r["tokens"] >= min_tokens})
    for key in keys:
        rows = [r for r in table if r["tokens"] >= min_tokens
                and ((r["temperature"], r["tokens"]) if by_length else r["temperature"]) == key]
        wins = [r["prompt_set"] for r in rows
                if r["p_over_e_tpot"] >= SPEED_RATIO_GOAL and r["p_over_e_e2e"] >= SPEED_RATIO_GOAL]
        both_fast = [r["prompt_set"] for r in rows if min(r["eagle3_tpot_speedup"], r["peagle_tpot_speedup"])
                     >= PLAIN_SPEEDUP_GOAL]
        out[key] = {"sets": [r["prompt_set"] for r in rows], "peagle_wins": wins, "both_over_plain": both_fast,
                    "meets goal": len(wins) >= 2 and len(both_fast) >= 2}
    return out


def why_rows(engine_doc: Mapping) -> list[dict]:
    """Each measured point's P-EAGLE / EAGLE-3 (TPOT) split into the acceptance factor (tau_P / tau_E) and the step
    factor (EAGLE-3's step / P-EAGLE's) by the step-time model fitted to that point's own phases
    (``compare.regime.predicted_regimes``)."""
    from peagle_nb.compare.regime import predicted_regimes

    keys = ("temperature", "tokens", "prompt_set", "measured", "predicted", "predicted_k", "acceptance_factor",
            "step_factor", "verdict")
    return [{k: r[k] for k in keys} for r in predicted_regimes(engine_doc)]


def served_conditional_rows(engine_doc: Mapping, k: int = 7, tokens: int = 256) -> list[dict]:
    """Conditional acceptance as served: from every verification step of the engine's K=``k`` runs over ``tokens``
    generated tokens (all sweeps pooled), per temperature, prompt set and method, the share of steps that accepted
    depth d among those that accepted depth d-1. The heads' own evaluation drafts greedily; this is the goal's
    "T <= 0.7" measured where the heads are served, sampled draft against sampled target included."""
    rows = []
    for reg in engine_doc.get("regimes", []):
        if reg["max_new_tokens"] != tokens:
            continue
        for ps in sorted({r["prompt_set"] for r in reg["runs"]}):
            for m in ("eagle3", "peagle"):
                accepted = [a for r in reg["runs"] if r["method"] == m and r["k"] == k and r["prompt_set"] == ps
                            for a in r["accepted_per_step"]]
                if not accepted:
                    continue
                reached = [sum(a >= d for a in accepted) for d in range(k + 1)]  # steps accepting >= d drafts
                cond = [reached[d] / reached[d - 1] if reached[d - 1] else None for d in range(1, 5)]
                deep = [cond[d - 1] for d in GOAL_DEPTHS if cond[d - 1] is not None]
                rows.append({"temperature": reg["temperature"], "prompt_set": ps, "method": m, "steps": len(accepted),
                             **{f"depth {d}": cond[d - 1] for d in range(1, 5)},
                             "weakest 2-4": min(deep) if deep else None,
                             "meets goal": m == "peagle" and bool(deep) and min(deep) >= CONDITIONAL_GOAL})
    return rows


def served_rows_both_machines(gpu_doc: Mapping, cpu_doc: Mapping | None, k: int = 7, tokens: int = 256) -> list[dict]:
    """:func:`served_conditional_rows` from the GPU record where it measured the point, else from the CPU sweep of the
    same heads (acceptance is the heads' and the text's, not the machine's), each row naming its machine."""
    rows = [dict(r, machine="H200") for r in served_conditional_rows(gpu_doc, k, tokens)]
    have = {(r["temperature"], r["prompt_set"]) for r in rows}
    if cpu_doc is not None:
        rows += [dict(r, machine="CPU") for r in served_conditional_rows(cpu_doc, k, tokens)
                 if (r["temperature"], r["prompt_set"]) not in have]
    return sorted(rows, key=lambda r: (r["temperature"], r["prompt_set"], r["method"]))


def ceiling_rows(ceiling_doc: Mapping, slots: tuple[int, ...] = GOAL_DEPTHS) -> list[dict]:
    """The conditional parallel ceiling (``analysis.parallel_ceiling``: slot d's acceptance among paths that passed
    slot d-1) per target, temperature and prompt set at ``slots``, its p10-p90 over resampled anchors, and whether it
    leaves room for the conditional-acceptance goal."""
    rows = []
    for name, target in ceiling_doc["targets"].items():
        for t, sets in target["by_temperature"].items():
            for ps, s in sets.items():
                row = {"target": name, "temperature": float(t), "prompt_set": ps, "anchors": s["anchors"]}
                for d in slots:
                    lo, hi = s["conditional_p10_p90"][d - 1]
                    row[f"slot {d}"] = s["conditional"][d - 1]
                    row[f"slot {d} p10-p90"] = f"{lo:.2f}-{hi:.2f}"
                row["lowest"] = min(s["conditional"][d - 1] for d in slots)
                row["room for goal"] = row["lowest"] >= CONDITIONAL_GOAL
                rows.append(row)
    return rows


def served_against_ceiling(served: list[dict], ceiling_doc: Mapping, target: str = "v3") -> list[dict]:
    """At every sampled point served: each head's conditional acceptance at depths 2-4 beside the parallel ceiling
    of ``target`` at the same temperature and prompt set (slot d is depth d: slot 1 sees its whole context)."""
    ceil = {(r["temperature"], r["prompt_set"]): r for r in ceiling_rows(ceiling_doc) if r["target"] == target}
    out = []
    for r in served:
        c = ceil.get((r["temperature"], r["prompt_set"]))
        if r["temperature"] == 0 or c is None:
            continue
        out.append({"temperature": r["temperature"], "prompt_set": r["prompt_set"], "method": r["method"],
                    "machine": r["machine"],
                    **{f"depth {d}": r[f"depth {d}"] for d in GOAL_DEPTHS},
                    **{f"ceiling {d}": c[f"slot {d}"] for d in GOAL_DEPTHS},
                    "above ceiling": [d for d in GOAL_DEPTHS if r[f"depth {d}"] is not None
                                      and r[f"depth {d}"] > c[f"slot {d}"]]})
    return out


def rung_rows(engine_docs: Mapping[str, Mapping]) -> list[dict]:
    """The regime map of each rung's pair side by side ({rung: engine record}): per temperature, generation length
    and prompt set, P-EAGLE / EAGLE-3 on TPOT with its spread over sweeps and verdict, end to end, and tau at K=7.
    A point with fewer than 3 sweeps says so (``sweeps``): one sweep has no spread, so its verdict is provisional."""
    rows = []
    for rung, doc in engine_docs.items():
        for r in regime_table(doc):
            rows.append({"rung": rung, "temperature": r["temperature"], "tokens": r["tokens"],
                         "prompt_set": r["prompt_set"], "sweeps": r["sweeps"], "p_over_e_tpot": r["p_over_e_tpot"],
                         "p_over_e_tpot_min": r["p_over_e_tpot_min"], "p_over_e_tpot_max": r["p_over_e_tpot_max"],
                         "tpot_verdict": r["tpot_verdict"], "p_over_e_e2e": r["p_over_e_e2e"],
                         "eagle3_tau_k7": r["eagle3_tau_k7"], "peagle_tau_k7": r["peagle_tau_k7"]})
    return sorted(rows, key=lambda r: (r["temperature"], r["tokens"], r["prompt_set"], float(r["rung"][1:])))


def per_prompt_tau(engine_doc: Mapping, temperature: float, prompt_set: str, tokens: int = 256, sweep: int = 0,
                   best_by: str = "tpot") -> list[dict]:
    """Tau of every prompt (``tokens`` new tokens over that prompt's steps) at each method's best K, by TPOT
    (``best_by="tpot"``) or by end-to-end tokens/s (``"e2e"``), and P-EAGLE's over EAGLE-3's. The TPOT summary is
    a median over prompts, while end-to-end tokens/s pools the time of all prompts, so the slowest prompts weigh
    most there. Where the two summaries disagree, this shows why."""
    if best_by not in ("tpot", "e2e"):
        raise ValueError(f"best_by={best_by!r}: choose 'tpot' (lowest time per output token) or 'e2e' (tokens/s)")
    reg = next(r for r in engine_doc["regimes"]
               if r["temperature"] == temperature and r["max_new_tokens"] == tokens)
    key = "best_k_tpot" if best_by == "tpot" else "best_k"
    best_k = {m: reg["summary"][prompt_set][f"{m}.{key}"] for m in ("eagle3", "peagle")}
    runs = {r["method"]: r for r in reg["runs"] if r["prompt_set"] == prompt_set and r["sweep"] == sweep
            and r["method"] in best_k and r["k"] == best_k[r["method"]]}
    rows = []
    for i, (e, p) in enumerate(zip(runs["eagle3"]["steps_per_prompt"], runs["peagle"]["steps_per_prompt"])):
        rows.append({"prompt": i, "eagle3_k": best_k["eagle3"], "eagle3_tau": tokens / e,
                     "peagle_k": best_k["peagle"], "peagle_tau": tokens / p, "p_over_e_tau": e / p})
    return rows


def training_length_rows(records: Mapping[str, Mapping], tokens: int = 512, edge: int = 256) -> list[dict]:
    """Two (or more) pairs served over ``tokens`` output tokens, named by what they were trained on (e.g. ``{"256":
    map record, "512": record of the pair trained on 512-position sequences}``): per temperature and prompt set, each
    pair's P-EAGLE / EAGLE-3 on TPOT (median, min-max over sweeps, verdict), both heads' TPOT speed-up over plain
    decoding (measured in the same record) and their tau at K=7 before and after output token ``edge`` (the heads'
    training length; notebook 08: why P-EAGLE drafts worse past it). Points one record lacks are left out."""
    out = []
    for name, doc in records.items():
        regime = {(r["temperature"], r["prompt_set"]): r for r in regime_table(doc) if r["tokens"] == tokens}
        temps = sorted({t for t, _ in regime})
        halves = {(t, r["method"], r["prompt_set"]): r for t in temps
                  for r in step_phases.tau_before_after(doc, t, tokens, edge)}
        for (t, ps), r in sorted(regime.items()):
            row = {"trained_on": name, "temperature": t, "prompt_set": ps, "sweeps": r["sweeps"],
                   "p_over_e_tpot": r["p_over_e_tpot"], "p_over_e_tpot_min": r["p_over_e_tpot_min"],
                   "p_over_e_tpot_max": r["p_over_e_tpot_max"], "verdict": r["tpot_verdict"],
                   "p_over_e_e2e": r["p_over_e_e2e"], "eagle3_tpot_speedup": r["eagle3_tpot_speedup"],
                   "peagle_tpot_speedup": r["peagle_tpot_speedup"]}
            for m in ("eagle3", "peagle"):
                h = halves.get((t, m, ps))
                row[f"{m}_tau_before"] = None if h is None else h["tau_before"]
                row[f"{m}_tau_after"] = None if h is None else h["tau_after"]
            out.append(row)
    return out


def tau_spread_rows(engine_doc: Mapping, k: int = 7) -> list[dict]:
    """tau at ``k`` in every sweep of each (temperature, output length, prompt set, method), as min / max / count. At
    T > 0 each sweep samples its own text, so this is how far the text alone moves tau between sweeps (notebook 08:
    why a sampled point of a few prompts can sit far from its forecast)."""
    runs: dict[tuple, list[Mapping]] = {}
    for reg in engine_doc.get("regimes", []):
        for r in reg["runs"]:
            if r["k"] == k and r["method"] in ("eagle3", "peagle"):
                key = (reg["temperature"], reg["max_new_tokens"], r["prompt_set"], r["method"])
                runs.setdefault(key, []).append(r)
    out = []
    for (t, n, ps, m), v in sorted(runs.items()):
        fresh = [r["tau_fresh"] for r in v if r.get("tau_fresh") is not None]
        out.append({"temperature": t, "tokens": n, "prompt_set": ps, "method": m,
                    "tau_min": min(r["tau"] for r in v), "tau_max": max(r["tau"] for r in v), "sweeps": len(v),
                    # tau on fresh text (steps not inside a repeated 8-gram) and the share of repeated text: a
                    # sweep whose text loops accepts more, so tau moves with the loops and fresh tau much less
                    "tau_fresh_min": min(fresh, default=None), "tau_fresh_max": max(fresh, default=None),
                    "repetition_min": min(r["repetition_fraction"] for r in v),
                    "repetition_max": max(r["repetition_fraction"] for r in v)})
    return out


def prefix_reproduced(few: Mapping, many: Mapping) -> dict:
    """Whether a sweep of more prompts per set (``many``) repeats, prompt for prompt, a sweep of its first prompts
    (``few``) run in another lease: for every run of ``few`` (temperature, length, set, method, K, sweep), the same
    run of ``many`` took the same number of steps on each of those prompts. Greedy and sampled runs alike: every
    prompt is sampled with a fixed seed (1000 x sweep + its index), so equal steps mean the same text was generated
    and accepted alike. Notebook 08: what more prompts change is then the added prompts alone."""
    def key(reg, r):
        return reg["temperature"], reg["max_new_tokens"], r["prompt_set"], r["method"], r["k"], r.get("sweep", 0)

    steps = {key(reg, r): r["steps_per_prompt"] for reg in many["regimes"] for r in reg["runs"]}
    compared = same = 0
    for reg in few["regimes"]:
        for r in reg["runs"]:
            other = steps.get(key(reg, r))
            if other is None:
                continue
            compared += 1
            same += other[:len(r["steps_per_prompt"])] == r["steps_per_prompt"]
    return {"compared": compared, "same": same}
