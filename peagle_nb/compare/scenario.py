"""Scenarios: everything the advisor and the dashboard need for one model + machine + workload.

A :class:`Scenario` bundles a step-time model, one acceptance curve per method, the candidate K per
method, the concurrencies to show and the data points behind it (measured runs or published anchors).
Built from measured results (``scenario_from_runs``) or from the published numbers
(``published_scenarios``). Explained in notebook 07.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from peagle_nb.compare import published as pub
from peagle_nb.compare.acceptance import AcceptanceCurve, curve_from_runs
from peagle_nb.compare.advisor import advise
from peagle_nb.compare.data import measured_groups, runs_of, select
from peagle_nb.compare.predict import sweep
from peagle_nb.compare.step_model import SPEC_METHODS, StepCost, fit_step_cost


@dataclass
class Scenario:
    name: str
    source: str  # "measured" (fitted to this suite's runs) or "published"
    cost: StepCost
    curves: dict[str, AcceptanceCurve]
    ks: dict[str, list[int]]
    concurrencies: list[int]
    points: list[dict] = field(default_factory=list)  # measured runs / published anchors to overlay
    notes: str = ""

    def predictions(self) -> list[dict]:
        """Model predictions for every method, K (1..max) and concurrency."""
        kmax = max(max(v) for v in self.ks.values())
        return sweep(self.cost, self.curves, list(range(1, kmax + 1)), self.concurrencies)

    def advice(self) -> list[dict]:
        return advise(self.cost, self.curves, self.concurrencies, self.ks)


def scenario_from_runs(name: str, runs: list[dict], concurrencies=(1, 2, 4, 8), max_k: int | None = None,
                       trained_k: dict[str, int] | None = None) -> Scenario:
    """Fit the step model and the acceptance curves to measured runs of one model/machine/workload.

    Candidate K per method: 1..``max_k`` (default: the largest measured K + 2, a modest extrapolation),
    capped for P-EAGLE by the head's trained depth when given in ``trained_k``.
    """
    spec = [r for r in runs if r.get("method") in SPEC_METHODS]
    if not spec:
        raise ValueError(f"scenario {name!r}: no EAGLE-3 or P-EAGLE runs")
    cost = fit_step_cost(runs, label=name)
    curves = {}
    for m in SPEC_METHODS:
        mruns = [r for r in spec if r["method"] == m]
        if mruns:
            curves[m] = curve_from_runs(mruns, label=m)
    top = max_k or max(int(r["k"]) for r in spec) + 2  # a modest extrapolation past the measured K
    ks = {m: list(range(1, min(top, (trained_k or {}).get(m, top)) + 1)) for m in curves}
    return Scenario(name, "measured", cost, curves, ks, list(concurrencies), points=list(runs),
                    notes=f"step model fitted to {len(runs)} measured runs")


def measured_scenarios(docs: list[dict], concurrencies=(1, 2, 4, 8),
                       trained_k: dict[str, int] | None = None) -> dict[str, Scenario]:
    """One scenario per measured file and prompt set that has draft/verify timings."""
    out = {}
    for key, runs in measured_groups(docs).items():
        try:
            out[key] = scenario_from_runs(key, runs, concurrencies, trained_k=trained_k)
        except ValueError:
            continue  # e.g. a file with only one method's timings: listed by the notebook, not modelled
    return out


def published_scenarios(doc: dict, concurrencies=(1, 4, 16, 64), fit_concurrencies=pub.FIT_CONCURRENCIES,
                        per_layer_ms: float | None = None) -> dict[str, Scenario]:
    """GPT-OSS-20B on a B200, one scenario per published workload, with the GPU profile fitted to the
    published ratios at ``fit_concurrencies`` (``per_layer_ms``: the cost per layer measured, not fitted:
    :func:`peagle_nb.compare.published.fit_profile`) and each head's own acceptance curve (tau at K=3 and 7)."""
    pf = pub.fit_profile(pub.anchors_20b(doc), fit_concurrencies, per_layer_ms)
    measured = f"; f = {per_layer_ms:.4f} ms per layer, measured" if per_layer_ms is not None else ""
    bounds = ", ".join(f"{n} on its {side} bound" for n, side in pf.fit.at_bound.items())
    out = {}
    for workload, curves in pf.curves.items():
        points = [r for r in select(runs_of([doc]), target=pub.TARGET_20B, prompt_set=workload)]
        out[workload] = Scenario(
            f"GPT-OSS-20B · B200 · {workload} (published)", "published", pf.cost, curves,
            {m: list(range(1, pub.TRAINED_K_20B + 1)) for m in SPEC_METHODS}, list(concurrencies), points,
            notes=f"GPU profile fitted to the blog's ratios at concurrency {list(pf.fit_concurrencies)} "
                  f"(RMS log error {pf.fit.rms:.3f}{'; ' + bounds if bounds else ''}{measured}); acceptance: each "
                  "head's curve through its published tau at K=3 and K=7")
    return out


def scale_acceptance(curve: AcceptanceCurve, factor: float) -> AcceptanceCurve:
    """The curve with every conditional rate multiplied by ``factor`` (capped at 1): a weaker (<1) or
    stronger (>1) drafter with the same shape."""
    from peagle_nb.compare.acceptance import conditional_rates

    rates, a = [], 1.0
    for c in conditional_rates(curve.rates):
        a *= min(1.0, c * factor)
        rates.append(a)
    return AcceptanceCurve(tuple(rates), min(1.0, curve.tail_alpha * factor), f"{curve.label} x{factor}",
                           curve.measured_positions)


def what_if(scn: Scenario, variants: dict[str, dict]) -> list[dict]:
    """Re-run the advisor under changed assumptions. ``variants`` maps a name to
    ``{"cost": {StepCost field: value}, "accept": {method: factor}}``; the row ``"as fitted"`` is the
    scenario itself. Returns one row per variant and concurrency (advisor columns + ``variant``)."""
    from dataclasses import replace

    rows = []
    for name, change in {"as fitted": {}, **variants}.items():
        cost = replace(scn.cost, **change.get("cost", {}))
        curves = {m: scale_acceptance(c, change.get("accept", {}).get(m, 1.0)) if m in change.get("accept", {})
                  else c for m, c in scn.curves.items()}
        for row in advise(cost, curves, scn.concurrencies, scn.ks):
            rows.append({"variant": name, **row})
    return rows


def slug(key: str) -> str:
    """A record-name-safe form of a scenario key: ``"engine_cpu.json · prose"`` -> ``"engine_cpu.prose"`` (a
    ``.json.gz`` file's name loses both suffixes)."""
    import re

    return ".".join(re.sub(r"[^A-Za-z0-9_-]+", "_", part.strip().removesuffix(".gz").removesuffix(".json")).strip("_")
                    for part in key.split("·"))
