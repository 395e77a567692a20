"""The speculative decoding engine: plain, EAGLE-3 (chain) and P-EAGLE (parallel) drafting, lossless
verification with KV-cache rollback, per-step statistics. Explained in notebooks 01-03.

- ``target_runner``: target passes over a croppable KV cache, EAGLE-3 features;
- ``drafting``: ``ChainDrafter`` (K passes) and ``ParallelDrafter`` (one pass over mask slots), and the
  ``DrafterWindow`` that limits how far back either attends;
- ``verify``: greedy acceptance (``peagle_kernels.greedy_verify``) and rejection sampling;
- ``decoder``: ``SpecDecoder.generate`` ties them together; ``stats``: what each step measured;
- ``checks``: clear errors for mismatched heads, K, prompts; ``evaluate``: prompt sets and K sweeps;
- ``run_record``: ``EngineRun``, the typed record of one configuration (``evaluate_run``; ``evaluate`` flattens it);
  ``sweep_summary``: ``SweepSummary``, a sweep's typed summary per prompt set (``summarize_sweep_sets``);
  ``phase_record``: ``StepPhases``, one configuration's step timed phase by phase.

The sweep behind data/results/engine_*.json and the drafting-cost harness live in the lab
(``peagle_nb.lab.sweeps.engine_sweep``, ``peagle_nb.lab.benchmarks.drafting_cost``).
"""

from peagle_nb.engine.checks import HeadMismatchError
from peagle_nb.engine.decoder import SpecDecoder
from peagle_nb.engine.drafting import DrafterWindow
from peagle_nb.engine.evaluate import RunSettings, SweepSettings, best_k, evaluate, evaluate_run, sweep
from peagle_nb.engine.phase_record import StepPhases
from peagle_nb.engine.run_record import EngineRun
from peagle_nb.engine.sweep_summary import SweepSummary
from peagle_nb.text.prompts import load_prompts
from peagle_nb.engine.stats import GenerationResult, StepStats

__all__ = ["DrafterWindow", "EngineRun", "GenerationResult", "HeadMismatchError", "RunSettings", "SpecDecoder",
           "StepPhases", "StepStats", "SweepSettings", "SweepSummary", "best_k", "evaluate", "evaluate_run",
           "load_prompts", "sweep"]
