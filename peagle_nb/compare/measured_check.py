"""The advisor's prediction for a measured sweep set against what the sweep measured, and the miss taken apart
(explained in notebook 07).

The advisor's step model is fitted to each step's drafting and verification times. A sweep's verdict is on
tokens per second of whole generations: each step also pays the host's work around the phases (bookkeeping), and
each prompt pays its prefill, the drafter's included. :func:`advice_vs_measured` follows P-EAGLE / EAGLE-3, each
at the sweep's best K, from what the step phases alone give to the end-to-end figure, one cause at a time
(:func:`peagle_nb.analysis.step_phases.speedup_breakdown`), so the step that moves the ratio most is the one the model
lacks.
"""

from __future__ import annotations

from collections.abc import Mapping

from peagle_nb.analysis import step_phases
from peagle_nb.engine.sweep_summary import SweepSummary

CAUSES = (("phases", "the step phases alone (what the model is fitted to)"),
          ("step_wall", "each step's wall time (plus the host's bookkeeping)"),
          ("decode", "decoding tokens/s (every step of real generations)"),
          ("end_to_end", "tokens/s with each prompt's prefill (the sweep's verdict)"))


STEP_NAMES = {"step_wall": "the host's bookkeeping", "decode": "real generations", "end_to_end": "the prefill"}


def advice_vs_measured(advice_row: Mapping, doc: Mapping, prompt_set: str) -> dict:
    """``advice_row``: the advisor's row at concurrency 1 for this file and set; ``doc``: the engine results file
    (``summary`` and ``phases``). Returns the predicted and measured ratio and verdicts (the measured one from
    :func:`peagle_nb.analysis.step_phases.verdict`, as in notebook 03's table), ``chain``: the P-EAGLE / EAGLE-3
    ratio at the sweep's best K after each of :data:`CAUSES`, each method's prefill, and ``largest_step``: the cause
    that moves the ratio most."""
    flat = doc.get("summary", {}).get(prompt_set)
    summary = SweepSummary.from_dict(flat) if flat else None
    if summary is None or summary.peagle_over_eagle3_at_best_k is None or not doc.get("phases"):
        raise ValueError(f"{prompt_set!r}: the results file needs a summary with both methods and step phases "
                         "(written by peagle-nb eval --sweep)")
    best = {m: int(summary.method(m).best_k) for m in ("eagle3", "peagle")}
    parts = {m: step_phases.speedup_breakdown(doc["runs"], doc["phases"], m, k, prompt_set) for m, k in best.items()}
    chain = {key: parts["peagle"][key] / parts["eagle3"][key] for key, _ in CAUSES}
    keys = [key for key, _ in CAUSES]
    moves = {keys[i]: chain[keys[i]] / chain[keys[i - 1]] - 1 for i in range(1, len(keys))}
    measured = summary.peagle_over_eagle3_at_best_k.to_dict()
    predicted = float(advice_row["peagle_over_eagle3"])
    return {"prompt_set": prompt_set, "predicted": predicted,
            "predicted_verdict": "peagle faster" if predicted > 1 else "eagle3 faster",
            "predicted_best_k": {m: advice_row[f"{m}_best_k"] for m in ("eagle3", "peagle")},
            "measured": measured, "measured_verdict": step_phases.verdict(measured), "measured_best_k": best,
            "tau_ratio": parts["peagle"]["tau"] / parts["eagle3"]["tau"], "chain": chain,
            "prefill_ms": {m: parts[m]["prefill_ms"] for m in best},
            "plain_prefill_ms": parts["eagle3"]["plain_prefill_ms"],
            "largest_step": min(moves, key=moves.get), "moves": moves}


def explain(check: Mapping) -> str:
    """The check in a few sentences, every figure from ``check``."""
    pb, mb = check["predicted_best_k"], check["measured_best_k"]
    ch, m = check["chain"], check["measured"]
    if check["measured_verdict"] == "tie":
        inside = m["min"] <= check["predicted"] <= m["max"]
        agreement = (f"{'inside' if inside else 'outside'} the measured spread, "
                     f"{check['predicted'] / m['median'] - 1:+.0%} from its median")
    else:
        agreement = "the same verdict" if check["predicted_verdict"] == check["measured_verdict"] else "a miss"
    text = (f"{check['prompt_set']}: predicted {check['predicted']:.2f} (P-EAGLE K={pb['peagle']}, EAGLE-3 K="
            f"{pb['eagle3']}); measured {m['median']:.2f} [{m['min']:.2f}, {m['max']:.2f}] (K={mb['peagle']} / "
            f"K={mb['eagle3']}, {check['measured_verdict']}): {agreement}. At the measured best K: phases alone "
            f"{ch['phases']:.2f}, with bookkeeping {ch['step_wall']:.2f}, decoding {ch['decode']:.2f}, with prefill "
            f"{ch['end_to_end']:.2f}; the largest drop comes from {STEP_NAMES[check['largest_step']]} "
            f"({check['moves'][check['largest_step']]:+.1%}).")
    if check["largest_step"] == "end_to_end":
        pf = check["prefill_ms"]
        text += (f" P-EAGLE's prefill takes {pf['peagle']:.2f} ms against EAGLE-3's {pf['eagle3']:.2f} ms (plain "
                 f"{check['plain_prefill_ms']:.2f} ms): its deeper drafter reads the whole prompt too, which a model "
                 "of steps cannot see; longer generations spread it thinner.")
    return text
