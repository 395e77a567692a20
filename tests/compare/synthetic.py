"""Synthetic measured results for the comparison tests: runs generated from a KNOWN step model and
acceptance curve (optionally with seeded noise), wrapped with make_results. Never written to data/."""

from __future__ import annotations

import random

from peagle_nb.compare.acceptance import AcceptanceCurve, geometric_rates
from peagle_nb.compare.step_model import StepCost
from peagle_nb.files.results import make_results

TRUTH = StepCost(v0=20.0, v1=0.8, e0=3.0, e1=0.3, p0=5.0, p1=0.4, label="truth")
CURVES = {"eagle3": AcceptanceCurve(tuple(geometric_rates(0.70, 8, 0.97)), 0.6, "eagle3"),
          "peagle": AcceptanceCurve(tuple(geometric_rates(0.75, 8, 0.97)), 0.65, "peagle")}
MACHINE = {"device": "cpu", "cpu_count": 2, "platform": "test"}


def runs(ks=(1, 2, 3, 4, 5, 6), batches=(1,), noise=0.0, seed=0, truth=TRUTH, curves=CURVES,
         prompt_set="prose") -> list[dict]:
    rng = random.Random(seed)

    def jitter(x):
        return x * (1 + rng.uniform(-noise, noise))

    out = []
    for b in batches:
        base = truth.baseline_ms(b)
        out.append(dict(method="none", k=0, batch_size=b, prompt_set=prompt_set, n_prompts=8, tau=1.0,
                        draft_ms_per_step=0.0, verify_ms_per_step=jitter(base), tokens_per_s=1000 * b / base))
        for m, curve in curves.items():
            for k in ks:
                d, v = jitter(truth.draft_ms(m, k, b)), jitter(truth.verify_ms(b * (k + 1)))
                rates = [min(1.0, jitter(a)) for a in curve.rates_for(k)]
                tau = 1 + sum(rates)
                out.append(dict(method=m, k=k, batch_size=b, prompt_set=prompt_set, n_prompts=8, tau=tau,
                                accept_rate_per_position=rates, draft_ms_per_step=d, verify_ms_per_step=v,
                                tokens_per_s=1000 * b * tau / (d + v)))
    return out


def doc(source="engine", **kwargs) -> dict:
    return make_results(source, runs(**kwargs), model={"target": "synthetic"}, notes="synthetic test data",
                        machine=MACHINE)
