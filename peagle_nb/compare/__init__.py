"""P-EAGLE vs EAGLE-3: step-time model, acceptance curves, predictions and the best-K advisor.

Core layer: pure functions over results documents (``peagle_nb/files/results.py``); plots live in
``peagle_nb.viz.compare_plots`` and the dashboard in ``peagle_nb.widgets.dashboard``. Explained in
notebook 07.
"""

from peagle_nb.compare.acceptance import (AcceptanceCurve, alpha_from_tau, conditional_rates, curve_from_runs,
                                          curve_from_tau, curve_through, fit_acceptance, tau_from_rates,
                                          tau_geometric)
from peagle_nb.compare.advisor import advise, best_k, measured_best, tau_cross_check, tau_same_prompts_check
from peagle_nb.compare.data import load_results, measured_groups, runs_of, select
from peagle_nb.compare.predict import leave_one_k_out, predict, summarize_errors, sweep
from peagle_nb.compare.step_model import SPEC_METHODS, StepCost, fit_step_cost

__all__ = [
    "AcceptanceCurve", "SPEC_METHODS", "StepCost", "advise", "alpha_from_tau", "best_k", "conditional_rates",
    "curve_from_runs", "curve_from_tau", "curve_through", "fit_acceptance", "fit_step_cost", "leave_one_k_out",
    "load_results", "measured_best", "measured_groups", "predict", "runs_of", "select", "summarize_errors", "sweep",
    "tau_cross_check", "tau_from_rates", "tau_geometric", "tau_same_prompts_check",
]
