"""GPT-OSS-20B on one B200 from the published numbers: a step-time model fitted to some of the blog's
ratios, checked on the others, and the advisor's best K compared with the blog's.

What is published (``data/results/published.json``, built by :mod:`peagle_nb.lab.records.published_sources`):
21 throughput ratios P-EAGLE / EAGLE-3 (three workloads x concurrency 1-64, each method at its best K in
{3, 5, 7}), each head's acceptance length at K=3 and K=7 on each workload, and the best K (P-EAGLE: 7 at
every concurrency; EAGLE-3: 3, "occasionally shifting toward higher values depending on concurrency").
No step times: ratios fix only the RELATIVE costs, so the model's absolute times are indicative only.

The model (:class:`~peagle_nb.compare.step_model.StepCost`, explained in notebook 07):

- acceptance: each head's own curve through its published tau at K=3 and K=7 (two parameters, two
  points: :func:`~peagle_nb.compare.acceptance.curve_through`); tau at K=5 is therefore interpolated;
- every forward pass (target or drafter) costs ``c`` (per pass: scheduling, metadata, sampling,
  launches) + ``f`` per layer + the time to read its weights once, + ``a`` per request and
  full-attention layer (reading that request's KV cache) + compute per row;
- fixed from hardware arithmetic (GPT-OSS-20B: 24 layers, 12 with full attention and 12 with a 128-token
  window, 32 experts with top-4 routing, ~3.6 B active of ~21 B parameters, MXFP4 experts; B200: ~8 TB/s
  HBM): weights read per pass (target without experts ~2.4 GB: 0.3 ms; EAGLE-3 head ~0.5 GB: 0.06 ms;
  P-EAGLE head ~1.1 GB: 0.14 ms); all expert weights (~10.5 GB) stream in 1.3 ms and a pass over n
  tokens touches a fraction ``1 - (7/8)^n`` of them; a drafter row costs the target's per-token compute
  ``v1`` times the drafter's share of FLOPs (EAGLE-3 head ~0.5 GFLOP, P-EAGLE head ~1.1 GFLOP, target ~7.2
  GFLOP per token), two rows per request and draft position (vLLM re-feeds the verified tokens);
- fitted continuously inside bounds (:mod:`~peagle_nb.compare.fitting`) to the log of the ratios at
  :data:`FIT_CONCURRENCIES`: ``c``, ``a`` and ``v1``, and ``f`` too unless it is measured
  (``per_layer_ms``: :func:`peagle_nb.compare.layer_cost.per_layer_cost` of the suite's H200 phases, the
  kernel-bound cost a layer adds to a graph-replayed pass). Sharing ``c`` and ``f`` between the three
  kinds of pass is what makes them identifiable: with a free fixed cost per kind of pass, the ratios
  only determine the step times at each method's usual best K, not how they split. Fitted alone, ``f``
  ends on its lower bound (the ratios cannot tell a layer's cost from a pass's).

The other ratios are the held-out check (:func:`ratio_table`); the best K is not fitted at all: it is
compared with the blog's, point by point (:func:`best_k_check`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from peagle_nb.files import paths
from peagle_nb.compare.acceptance import AcceptanceCurve, curve_through
from peagle_nb.compare.data import load_results, runs_of, select
from peagle_nb.compare.fitting import Fit, least_squares
from peagle_nb.compare.predict import predict
from peagle_nb.compare.step_model import SPEC_METHODS, StepCost
from peagle_nb.models.public_heads import public_head

TARGET_20B = "openai/gpt-oss-20b"
TRAINED_K_20B = public_head("amazon/GPT-OSS-20B-P-EAGLE").trained_k  # the head the blog measured
SWEPT_K = (3, 5, 7)  # what the blog swept
ALL_K = tuple(range(1, TRAINED_K_20B + 1))
FIT_CONCURRENCIES = (1, 4, 16, 64)  # the fit subset; the blog's other concurrencies are held out

V_EXPERT_MS = 1.3
EXPERT_FRACTION = 4 / 32
WEIGHTS_MS = {"target": 0.3, "eagle3": 0.06, "peagle": 0.14}  # reading each pass's (non-expert) weights
LAYERS = {"target": 24, "eagle3": 1, "peagle": 4}
ATTENTION_LAYERS = {"target": 12, "eagle3": 1, "peagle": 4}  # full-attention layers
DRAFTER_FLOPS_SHARE = {"eagle3": 0.5 / 7.2, "peagle": 1.1 / 7.2}
ROWS_PER_DRAFT = 2  # vLLM's drafter input holds ~2K rows per request for K drafts
FITTED = ("c", "f", "a", "v1")
LOWER = (0.0, 0.0, 0.0, 0.0)
UPPER = (20.0, 5.0, 1.0, 1.0)
STARTS = ((0.2, 0.01, 0.01, 0.01), (1.0, 0.05, 0.001, 0.002), (0.05, 0.001, 0.03, 0.03))
MEANING = {"c": "ms per forward pass (any pass)", "f": "ms per layer of a pass",
           "a": "ms per request and full-attention layer", "v1": "ms per verified token (compute)"}


def load_published(path=None) -> dict:
    """The published numbers document (validated)."""
    return load_results([path or paths.results_dir() / "published.json"])[0]


def anchors_20b(doc: dict) -> dict[str, dict]:
    """Per workload: ``tau[method][K]`` (K=3 and 7) and ``ratio[concurrency]`` of GPT-OSS-20B on B200."""
    runs = select(runs_of([doc]), target=TARGET_20B)
    out: dict[str, dict] = {}
    for r in select(runs, kind="speedup_over_eagle3"):
        out.setdefault(r["prompt_set"], {"tau": {}, "ratio": {}})["ratio"][r["concurrency"]] = r["speedup_over_eagle3"]
    for r in select(runs, kind="acceptance"):
        if r["prompt_set"] in out:
            out[r["prompt_set"]]["tau"].setdefault(r["method"], {})[r["k"]] = r["tau"]
    if not out or any(len(a["tau"].get(m, {})) < 2 for a in out.values() for m in SPEC_METHODS):
        raise ValueError("published.json lacks the GPT-OSS-20B ratios or the acceptance at two K per head; "
                         "rebuild it: python -m peagle_nb.lab.records.published_sources")
    return out


def published_best_k(doc: dict) -> dict[str, dict]:
    """Per method: the blog's best K, its swept set and caveat (``None`` when the statement has none)."""
    recs = select(runs_of([doc]), kind="best_k", target=TARGET_20B)
    return {r["method"]: {"k": r["k"], "k_swept": tuple(r["k_swept"]), "caveat": r.get("caveat"),
                          "quote": r.get("quote")} for r in recs}


def curves_20b(anchor: dict) -> dict[str, AcceptanceCurve]:
    """Each head's own acceptance curve through its published tau at K=3 and K=7."""
    return {m: curve_through(sorted(anchor["tau"][m].items()),
                             label=f"{m} (published " + ", ".join(f"tau {t} at K={k}" for k, t in
                                                                 sorted(anchor["tau"][m].items())) + ")")
            for m in SPEC_METHODS}


def profile(params: dict[str, float], label: str = "GPT-OSS-20B on B200 (fitted to published ratios)") -> StepCost:
    """The :class:`StepCost` of the fitted numbers (``c, f, a, v1``) plus the fixed hardware arithmetic."""
    a, v1 = params["a"], params["v1"]

    def pass_ms(kind: str) -> float:
        return params["c"] + LAYERS[kind] * params["f"] + WEIGHTS_MS[kind]

    return StepCost(v0=pass_ms("target"), v1=v1, e0=pass_ms("eagle3"), p0=pass_ms("peagle"),
                    e1=ROWS_PER_DRAFT * v1 * DRAFTER_FLOPS_SHARE["eagle3"],
                    p1=ROWS_PER_DRAFT * v1 * DRAFTER_FLOPS_SHARE["peagle"],
                    v_expert=V_EXPERT_MS, expert_fraction=EXPERT_FRACTION, label=label,
                    v_req=ATTENTION_LAYERS["target"] * a, e_req=ATTENTION_LAYERS["eagle3"] * a,
                    p_req=ATTENTION_LAYERS["peagle"] * a)


def best_of(cost: StepCost, curve: AcceptanceCurve, method: str, concurrency: int, ks=SWEPT_K) -> dict:
    """The prediction with the highest tokens/s over ``ks`` (ties: the smaller K)."""
    return max((predict(cost, curve, method, k, concurrency) for k in sorted(ks)),
               key=lambda p: (p["tokens_per_s"], -p["k"]))


def predicted_ratio(cost: StepCost, curves: dict[str, AcceptanceCurve], concurrency: int, ks=SWEPT_K) -> float:
    """P-EAGLE over EAGLE-3 throughput, each at its best K in ``ks`` (what the blog's captions report)."""
    return (best_of(cost, curves["peagle"], "peagle", concurrency, ks)["tokens_per_s"]
            / best_of(cost, curves["eagle3"], "eagle3", concurrency, ks)["tokens_per_s"])


@dataclass
class PublishedFit:
    """The fitted GPU profile, the curves it used and what it was fitted to."""

    cost: StepCost
    fit: Fit
    curves: dict[str, dict[str, AcceptanceCurve]]  # workload -> method -> curve
    fit_concurrencies: tuple[int, ...]
    anchors: dict[str, dict] = field(repr=False, default_factory=dict)
    fixed: dict[str, float] = field(default_factory=dict)  # parameters measured, not fitted

    @property
    def params(self) -> dict[str, float]:
        """Every parameter in ``FITTED`` order, fitted or fixed."""
        return {n: self.fixed[n] if n in self.fixed else self.fit.params[n] for n in FITTED}


def fit_profile(anchors: dict[str, dict], fit_concurrencies=FIT_CONCURRENCIES,
                per_layer_ms: float | None = None) -> PublishedFit:
    """Fit ``c, f, a, v1`` to the log of the published ratios at ``fit_concurrencies`` (all workloads);
    ``per_layer_ms`` fixes ``f`` at a measured value and fits the other three."""
    missing = [c for c in fit_concurrencies if not all(c in a["ratio"] for a in anchors.values())]
    if missing or not fit_concurrencies:
        raise ValueError(f"fit_concurrencies {list(fit_concurrencies)}: no published ratio at {missing or 'any'}; "
                         f"choose among {sorted(next(iter(anchors.values()))['ratio'])}")
    if per_layer_ms is not None and not 0 <= per_layer_ms <= UPPER[FITTED.index("f")]:
        raise ValueError(f"per_layer_ms {per_layer_ms} is outside [0, {UPPER[FITTED.index('f')]}] ms: measure it "
                         "from a GPU's step phases (peagle_nb.compare.layer_cost.per_layer_cost)")
    fixed = {} if per_layer_ms is None else {"f": float(per_layer_ms)}
    free = [i for i, n in enumerate(FITTED) if n not in fixed]
    curves = {w: curves_20b(a) for w, a in anchors.items()}

    def residuals(p):
        cost = profile({**p, **fixed})
        return [math.log(predicted_ratio(cost, curves[w], c) / a["ratio"][c])
                for w, a in anchors.items() for c in fit_concurrencies]

    fit = least_squares(residuals, [FITTED[i] for i in free], [LOWER[i] for i in free], [UPPER[i] for i in free],
                        [tuple(s[i] for i in free) for s in STARTS])
    return PublishedFit(profile({**fit.params, **fixed}), fit, curves, tuple(fit_concurrencies), anchors, fixed)


def extrapolation_check(anchors: dict[str, dict], split: int = 8, per_layer_ms: float | None = None) -> list[dict]:
    """Fit on the concurrencies up to ``split`` and predict the ones above it, then the reverse: unlike the
    held-out points of :data:`FIT_CONCURRENCIES`, which lie between fitted ones, these test the model outside
    the range it saw. One row per direction: ``fit_on``, ``predicted`` concurrencies, the held-out errors'
    ``n`` / ``mean_abs`` / ``max_abs`` and the worst point."""
    every = sorted(next(iter(anchors.values()))["ratio"])
    low, high = [c for c in every if c <= split], [c for c in every if c > split]
    if not low or not high:
        raise ValueError(f"split {split} leaves nothing on one side of the published concurrencies {every}")
    rows = []
    for name, fit_on, predicted in (("low -> high", low, high), ("high -> low", high, low)):
        table = ratio_table(fit_profile(anchors, fit_on, per_layer_ms))
        held = [r for r in table if r["role"] == "held out"]
        worst = max(held, key=lambda r: abs(r["error"]))
        rows.append({"direction": name, "fit_on": fit_on, "predicted": predicted, **error_summary(table),
                     "worst": f"{worst['workload']} c{worst['concurrency']}", "worst_error": worst["error"]})
    return rows


def ratio_table(pf: PublishedFit) -> list[dict]:
    """Every published ratio beside the model's: ``role`` "fit" or "held out", ``error`` = predicted/published - 1."""
    rows = []
    for w, a in pf.anchors.items():
        for c, published in sorted(a["ratio"].items()):
            pred = predicted_ratio(pf.cost, pf.curves[w], c)
            rows.append({"workload": w, "concurrency": c, "role": "fit" if c in pf.fit_concurrencies else "held out",
                         "published": published, "predicted": round(pred, 4), "error": round(pred / published - 1, 4)})
    return rows


def error_summary(rows: list[dict], role: str = "held out") -> dict:
    errs = [abs(r["error"]) for r in rows if r["role"] == role]
    return {"n": len(errs), "mean_abs": sum(errs) / len(errs) if errs else None, "max_abs": max(errs, default=None)}


def best_k_check(pf: PublishedFit, best: dict[str, dict]) -> list[dict]:
    """Per workload, concurrency and method: the advisor's best K over the blog's swept set beside the blog's
    best K (an exact comparison), its best over K=1..10, and for a miss the reason in words."""
    rows = []
    for w, a in pf.anchors.items():
        for c in sorted(a["ratio"]):
            for m in SPEC_METHODS:
                pub = best[m]
                curve = pf.curves[w][m]
                model_k = best_of(pf.cost, curve, m, c, pub["k_swept"])["k"]
                row = {"workload": w, "concurrency": c, "method": m, "published_best_k": pub["k"],
                       "model_best_k": model_k, "model_best_k_1_10": best_of(pf.cost, curve, m, c, ALL_K)["k"],
                       "match": model_k == pub["k"], "caveat": pub["caveat"]}
                row["why"] = None if row["match"] else explain_miss(pf, w, c, m, pub["k"], model_k, pub["caveat"])
                rows.append(row)
    return rows


def _verify_parts(cost: StepCost, k: int, c: int) -> dict[str, float]:
    n = c * (k + 1)
    return {"per-token verification compute": cost.v1 * n,
            "MoE expert loading": cost.v_expert * (1 - (1 - cost.expert_fraction) ** n)}


def explain_miss(pf: PublishedFit, workload: str, c: int, method: str, published_k: int, model_k: int,
                 caveat: str | None) -> str:
    """One plain sentence or three: what the model trades off at this point and which term it likely lacks."""
    curve, cost = pf.curves[workload][method], pf.cost
    at_pub, at_model = predict(cost, curve, method, published_k, c), predict(cost, curve, method, model_k, c)
    dtau = at_pub["tau"] / at_model["tau"] - 1
    dstep = at_pub["step_ms"] / at_model["step_ms"] - 1
    loss = 1 - at_pub["tokens_per_s"] / at_model["tokens_per_s"]
    name = "P-EAGLE" if method == "peagle" else "EAGLE-3"
    text = (f"{name}, {workload}, concurrency {c}: the model picks K={model_k}, the blog measured K={published_k}. "
            f"K={published_k} gives {dtau:+.0%} tokens per step but {dstep:+.0%} step time, so the model "
            f"predicts it {loss:.1%} slower. ")
    if published_k > model_k:
        parts = {name_: _verify_parts(cost, published_k, c)[name_] - _verify_parts(cost, model_k, c)[name_]
                 for name_ in _verify_parts(cost, model_k, c)}
        parts["drafting"] = at_pub["draft_ms"] - at_model["draft_ms"]
        biggest = max(parts, key=parts.get)
        text += (f"Most of the extra step time is {biggest} ({parts[biggest]:.2f} of "
                 f"{at_pub['step_ms'] - at_model['step_ms']:.2f} ms). Likely missing: ")
        if biggest == "MoE expert loading":
            text += ("expert weights that the B200 reads anyway at this batch (the model's 1 - (7/8)^n coverage "
                     "ignores how the fused MoE kernels group and pad tokens).")
        elif biggest == "drafting":
            text += "a drafter pass whose cost grows less with K than the model assumes."
        else:
            text += ("verification that costs less per extra query token than per request (kernels padded to "
                     "a tile, CUDA-graph batch buckets), so deeper K is nearly free on the GPU.")
        unpublished = [k for k in (model_k, published_k) if k not in pf.anchors[workload]["tau"][method]]
        if unpublished:
            text += f" Also, tau at K={unpublished[0]} is not published: it is interpolated between K=3 and K=7."
    else:
        text += ("Likely missing: a cost per drafter pass that grows with batch (the drafter's attention, "
                 "sampling and metadata per pass), which would make each extra EAGLE-3 pass dearer.")
    if caveat:
        text += f" The blog's own caveat: {caveat}."
    return text


def decomposition(anchors: dict[str, dict], best: dict[str, dict]) -> list[dict]:
    """Model-free reading of each published ratio at the blog's best K (P-EAGLE 7, EAGLE-3 3):
    ratio = (tau_P / tau_E) x (EAGLE-3 step time / P-EAGLE step time), so the step-time ratio is implied.
    Where EAGLE-3's best K was higher (the blog's caveat) the implied step ratio is off by that much."""
    kp, ke = best["peagle"]["k"], best["eagle3"]["k"]
    rows = []
    for w, a in anchors.items():
        acc = a["tau"]["peagle"][kp] / a["tau"]["eagle3"][ke]
        for c, ratio in sorted(a["ratio"].items()):
            rows.append({"workload": w, "concurrency": c, "published_ratio": ratio,
                         f"tau_P(K={kp}) / tau_E(K={ke})": round(acc, 4),
                         "implied EAGLE-3 step / P-EAGLE step": round(ratio / acc, 4)})
    return rows
