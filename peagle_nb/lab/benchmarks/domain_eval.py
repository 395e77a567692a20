"""Drafting acceptance per domain, greedy and sampled at temperature 1, each with the repetition fraction of the
text it was measured on and the fresh-vs-repeated split (``peagle_nb.analysis.repetition``); and the domain-shift
results file (a head trained without a domain vs the shipped head on that domain's prompts). Explained in notebook 08.

- Greedy: the target's greedy continuation of each prompt, every anchor's K drafts in one teacher-forced
  pass, and the literal draft-verify walk over it (``training.drafter_eval``: the same numbers as a greedy
  draft-verify loop, which tests check).
- Sampled: the engine (:class:`peagle_nb.engine.SpecDecoder`) at temperature 1 with rejection sampling,
  one seed per repetition (seed ``s`` decodes prompt ``i`` with seed ``s * 1000 + i``); its output follows
  the target's own distribution, so its acceptance is what a user sampling at T=1 gets.

Each measured configuration is one flat run record (``peagle_nb.files.results`` format) that keeps its raw
per-prompt data (accepted drafts and the fresh/repeated class of every step, generated and repeated token
counts), so :func:`record_from_raw` recomputes every summary number from the file itself.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence

import torch

from peagle_nb.files import results
from peagle_nb.analysis.repetition import MIN_REPEAT, acceptance, aggregate_seeds, repeated_mask, step_starts

DOMAIN_SHIFT_FILE = ("domain_shift", "domain_shift.json")  # under data/results/
SEED_STRIDE = 1000


def _steps_as_records(accepted: Sequence[int], k: int) -> list[dict]:
    return [{"num_drafts": k, "accepted": int(a), "new_tokens": int(a) + 1} for a in accepted]


@torch.no_grad()
def greedy_runs(target, head, prompts: Sequence[torch.Tensor], k: int, max_new_tokens: int) -> list[tuple]:
    """``(prompt_ids, generated_ids, steps)`` per prompt for greedy drafting at depth ``k`` (teacher-forced)."""
    from peagle_nb.models.target import target_features
    from peagle_nb.training.drafter_eval import accepted_lengths, greedy_references, walk_steps
    from peagle_nb.training.drafter_forward import all_anchor_drafts

    device = next(target.parameters()).device
    out = []
    for p, seq in zip(prompts, greedy_references(target, list(prompts), max_new_tokens)):
        x = seq[None].to(device)
        res = target(input_ids=x, output_hidden_states=True)
        feats = target_features(res.hidden_states, head.aux_layer_ids).float()
        acc = accepted_lengths(all_anchor_drafts(head, x, feats, k), res.logits[0].argmax(-1))
        steps = walk_steps(acc.cpu(), len(p), x.shape[1], k)
        out.append((p.tolist(), seq[len(p):].tolist(), _steps_as_records(steps, k)))
    return out


def sampled_runs(target, tokenizer, head, method: str, prompts: Sequence[torch.Tensor], k: int,
                 max_new_tokens: int, seed: int, temperature: float = 1.0, engine: str = "reference") -> list[tuple]:
    """``(prompt_ids, generated_ids, steps)`` per prompt, decoded by the engine at ``temperature`` (``engine``:
    "reference" or "lean", which give the same tokens and steps for the same seeds)."""
    from peagle_nb.engine.evaluate import make_decoder

    dec = make_decoder(engine, target, tokenizer, head, method, k)
    out = []
    for i, p in enumerate(prompts):
        r = dec.generate(p.tolist(), max_new_tokens, temperature=temperature, seed=seed * SEED_STRIDE + i)
        out.append((p.tolist(), list(r.tokens), r.steps))
    return out


def raw_from_runs(runs: Sequence[tuple], n: int = MIN_REPEAT) -> list[dict]:
    """Per prompt: accepted drafts and the class (1 = repeated) of every step, generated and repeated tokens."""
    raw = []
    for prompt_ids, generated, steps in runs:
        mask = repeated_mask(prompt_ids, generated, n)
        starts = step_starts(steps, len(generated))
        acc = [int(st["accepted"] if isinstance(st, Mapping) else st.accepted) for st in steps[: len(starts)]]
        raw.append({"accepted": acc, "repeated": [int(mask[s]) for s in starts], "tokens": len(generated),
                    "repeated_tokens": int(sum(mask))})
    return raw


def _clean(x: float) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else x


def record_from_raw(raw: Sequence[Mapping], k: int) -> dict:
    """The summary fields of a run record, from its raw per-prompt data only."""
    every = [a for r in raw for a in r["accepted"]]
    fresh = [a for r in raw for a, c in zip(r["accepted"], r["repeated"]) if not c]
    rep = [a for r in raw for a, c in zip(r["accepted"], r["repeated"]) if c]
    tokens = sum(r["tokens"] for r in raw)
    out = {"steps": len(every), "generated_tokens": tokens,
           "repetition_fraction": sum(r["repeated_tokens"] for r in raw) / tokens if tokens else 0.0,
           "repeated_step_fraction": len(rep) / len(every) if every else 0.0}
    for name, acc in (("", every), ("fresh_", fresh), ("repeated_", rep)):
        a = acceptance(acc, k)
        out[f"{name}steps"] = a["steps"]
        out[f"{name}tau"] = _clean(a["tau"])
        out[f"{name}accept_rate_per_position"] = [_clean(x) for x in a["accept_rate_per_position"]]
    return out


def run_record(head_name: str, method: str, prompt_set: str, mode: str, seed: int | None, k: int,
               max_new_tokens: int, runs: Sequence[tuple], n: int = MIN_REPEAT) -> dict:
    raw = raw_from_runs(runs, n)
    return {"head": head_name, "method": method, "prompt_set": prompt_set, "mode": mode,
            "temperature": 0.0 if mode == "greedy" else 1.0, "seed": seed, "k": k, "n_prompts": len(runs),
            "max_new_tokens": max_new_tokens, "repeat_n": n, **record_from_raw(raw, k), "raw": raw}


def evaluate_heads(target, tokenizer, heads: Mapping[str, tuple[str, object]],
                   prompt_sets: Mapping[str, Sequence[torch.Tensor]], k: int = 7, max_new_tokens: int = 96,
                   seeds: Sequence[int] = (0, 1, 2), greedy: bool = True, deadline: float | None = None,
                   log=print, engine: str = "reference") -> list[dict]:
    """Run records for every head (``{name: (method, head)}``) x prompt set: one greedy record and one sampled
    record per seed (decoded by ``engine``, see :func:`sampled_runs`). Past ``deadline`` (``time.monotonic()``) no
    further configuration starts."""
    records = []
    for head_name, (method, head) in heads.items():
        for set_name, prompts in prompt_sets.items():
            modes = ([("greedy", None)] if greedy else []) + [("sampled", s) for s in seeds]
            for mode, seed in modes:
                if deadline is not None and time.monotonic() > deadline:
                    log(f"deadline reached: {head_name} {set_name} {mode} {seed} not measured")
                    return records
                t0 = time.monotonic()
                runs = (greedy_runs(target, head, prompts, k, max_new_tokens) if mode == "greedy" else
                        sampled_runs(target, tokenizer, head, method, prompts, k, max_new_tokens, seed,
                                     engine=engine))
                rec = run_record(head_name, method, set_name, mode, seed, k, max_new_tokens, runs)
                rec["seconds"] = round(time.monotonic() - t0, 2)
                records.append(rec)
                log(f"{head_name} {set_name} {mode}{'' if seed is None else f' seed {seed}'}: tau {rec['tau']:.2f} "
                    f"(fresh {_fmt(rec['fresh_tau'])}, repeated {_fmt(rec['repeated_tau'])}), "
                    f"repetition {100 * rec['repetition_fraction']:.1f}%")
    return records


def _fmt(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"


def _nan(x):
    return float("nan") if x is None else x


def _nan_to_none(obj):
    """JSON has no NaN: a quantity with no data (a class with no steps) is null."""
    if isinstance(obj, float) and math.isnan(obj):
        return None
    if isinstance(obj, Mapping):
        return {k: _nan_to_none(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_nan_to_none(v) for v in obj]
    return obj


def summarize(records: Sequence[Mapping]) -> dict:
    """``{head: {prompt_set: {"greedy": fields, "sampled": spread over seeds}}}`` and, for every pair of
    heads named ``X`` and ``X-no-<set>``, the domain-shift gaps on ``<set>`` (greedy and sampled mean tau)."""
    keys = ("tau", "accept_rate_per_position", "repetition_fraction", "repeated_step_fraction", "fresh_tau",
            "repeated_tau", "fresh_accept_rate_per_position", "repeated_accept_rate_per_position")
    out: dict = {}
    for r in records:
        cell = out.setdefault(r["head"], {}).setdefault(r["prompt_set"], {})
        fields = {key: (_nan(r[key]) if not isinstance(r[key], list) else [_nan(x) for x in r[key]]) for key in keys}
        if r["mode"] == "greedy":
            cell["greedy"] = fields
        else:
            cell.setdefault("_seeds", []).append(fields)
    for head in out.values():
        for cell in head.values():
            seeds = cell.pop("_seeds", None)
            if seeds:
                cell["sampled"] = aggregate_seeds(seeds)
    shift = {}
    for name in out:
        for set_name in out[name]:
            other = f"{name}-no-{set_name}"
            if other in out and set_name in out[other]:
                gap = {}
                for mode in ("greedy", "sampled"):
                    a, b = out[name][set_name].get(mode), out[other][set_name].get(mode)
                    if a and b:
                        ta = a["tau"] if mode == "greedy" else a["tau"]["mean"]
                        tb = b["tau"] if mode == "greedy" else b["tau"]["mean"]
                        gap[mode] = {"with": ta, "without": tb, "tau_lost": ta - tb}
                shift[f"{name} vs {other}"] = {"prompt_set": set_name, **gap}
    return _nan_to_none({"by_head": out, "domain_shift": shift})


def make_domain_shift_doc(records: Sequence[Mapping], heads_info: Mapping, notes: str) -> dict:
    """The results document (``peagle_nb.files.results`` format, source "engine") with a ``summary`` object."""
    doc = results.make_results("engine", [dict(r) for r in records], model={"heads": dict(heads_info)}, notes=notes)
    doc["kind"] = "domain_shift"
    doc["summary"] = summarize(records)
    return results.validate(doc)


def check_recomputes(doc: Mapping) -> None:
    """Every run's summary fields equal :func:`record_from_raw` of its raw data, and ``summary`` equals
    :func:`summarize` of the runs: raise ``ValueError`` naming the first difference."""
    import json

    for i, run in enumerate(doc["runs"]):
        again = record_from_raw(run["raw"], run["k"])
        for key, value in again.items():
            if json.dumps(value) != json.dumps(run[key]):
                raise ValueError(f"runs[{i}].{key} = {run[key]!r} but its raw data give {value!r}")
    if json.dumps(summarize(doc["runs"]), sort_keys=True) != json.dumps(doc["summary"], sort_keys=True):
        raise ValueError("summary differs from the one recomputed from the runs")


def summary_table(summary: Mapping) -> list[dict]:
    """One row per head and prompt set of a :func:`summarize` result (``by_head``): greedy tau, repetition and
    fresh/repeated tau; sampled tau mean, min and max over seeds and mean repetition (notebook 08's tables)."""
    rows = []
    for head, per_set in summary["by_head"].items():
        for d, cell in per_set.items():
            g, s = cell.get("greedy", {}), cell.get("sampled", {})
            tau, rep = s.get("tau", {}), s.get("repetition_fraction", {})
            rows.append({"head": head, "set": d, "greedy tau": g.get("tau"),
                         "greedy repetition": g.get("repetition_fraction"), "greedy fresh tau": g.get("fresh_tau"),
                         "greedy repeated tau": g.get("repeated_tau"), "sampled tau (mean)": tau.get("mean"),
                         "sampled tau min": tau.get("min"), "sampled tau max": tau.get("max"),
                         "sampled repetition (mean)": rep.get("mean")})
    return rows


def flat_summary(summary: Mapping, prefix: str = "") -> dict:
    """The numbers a notebook records, as ``{"<prefix><head>.<set>.greedy.tau": value, ...}``: greedy tau,
    repetition fraction, fresh/repeated tau and per-position acceptance; sampled tau per seed, mean, min, median,
    max, mean repetition fraction, mean fresh tau and mean per-position acceptance."""
    out = {}
    for head, per_set in summary["by_head"].items():
        for d, cell in per_set.items():
            key = f"{prefix}{head}.{d}"
            g = cell.get("greedy")
            if g:
                for name in ("tau", "repetition_fraction", "fresh_tau", "repeated_tau", "accept_rate_per_position"):
                    out[f"{key}.greedy.{name}"] = g[name]
            s = cell.get("sampled")
            if s:
                out[f"{key}.sampled.tau_seeds"] = s["tau"]["values"]
                for stat in ("mean", "min", "median", "max"):
                    out[f"{key}.sampled.tau_{stat}"] = s["tau"][stat]
                out[f"{key}.sampled.repetition_fraction_mean"] = s["repetition_fraction"]["mean"]
                out[f"{key}.sampled.fresh_tau_mean"] = s["fresh_tau"]["mean"]
                out[f"{key}.sampled.accept_rate_per_position_mean"] = [p["mean"] for p in
                                                                       s["accept_rate_per_position"]]
    return out
