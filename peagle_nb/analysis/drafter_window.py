"""Why a head drafts worse past its training length, from the runs of ``lab/benchmarks/drafter_window.py``.

Explained in notebook 08 (family v3). Every head of the suite is trained on 256-position sequences; over 512-token
outputs the v3 P-EAGLE head's tau falls after output token 256 while EAGLE-3's holds. The benchmark decodes the same
prompts again with the drafter's attention limited to a window of its newest real slots (``engine.drafting``): the
keys keep their positions, only the distances the drafter attends across change. If tau past the edge comes back
with the window, on the same text (greedy decoding is lossless, so every configuration writes the same tokens), the
cause is attention across distances the head never saw in training, not the text there.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from peagle_nb.analysis.metrics import acceptance_length

EDGE = 256  # output token where the runs are split: the heads' training sequence length


def split_steps(accepted: Sequence[int], steps_per_prompt: Sequence[int], fresh: Sequence[int] | None,
                edge: int = EDGE) -> dict[str, list[int]]:
    """Accepted counts of one run's steps grouped by where each step starts: ``before`` / ``after`` output token
    ``edge``, and (with ``fresh``, 1 per step that starts on text outside any repeated 8-gram) the same on fresh text
    only (``before_fresh`` / ``after_fresh``). The first output token comes from the prefill."""
    if sum(steps_per_prompt) != len(accepted) or (fresh is not None and len(fresh) != len(accepted)):
        raise ValueError(f"a run of {len(accepted)} steps needs steps_per_prompt summing to it "
                         f"(got {sum(steps_per_prompt)}) and one fresh flag per step")
    groups: dict[str, list[int]] = {"before": [], "after": [], "before_fresh": [], "after_fresh": []}
    i = 0
    for n in steps_per_prompt:
        produced = 1
        for j in range(i, i + n):
            side = "before" if produced < edge else "after"
            groups[side].append(accepted[j])
            if fresh is not None and fresh[j]:
                groups[f"{side}_fresh"].append(accepted[j])
            produced += accepted[j] + 1
        i += n
    return groups


def run_row(run: Mapping, edge: int = EDGE) -> dict:
    """One configuration's tau before and after ``edge`` (all steps and fresh-text steps, with their step counts)."""
    g = split_steps(run["accepted_per_step"], run["steps_per_prompt"], run.get("step_fresh"), edge)

    def tau(xs: list[int]) -> float | None:
        return acceptance_length(xs) if xs else None

    repeated = None if not g["after"] or run.get("step_fresh") is None else 1 - len(g["after_fresh"]) / len(g["after"])
    return {"family": run["family"], "temperature": run["temperature"], "prompt_set": run["prompt_set"],
            "method": run["method"], "k": run["k"], "window": run["window"], "sinks": run.get("sinks", 0),
            "tau": acceptance_length(run["accepted_per_step"]),
            **{f"tau_{name}": tau(xs) for name, xs in g.items()},
            **{f"steps_{name}": len(xs) for name, xs in g.items()}, "repeated_share_after": repeated}


def rows(doc: Mapping, edge: int = EDGE) -> list[dict]:
    """:func:`run_row` of every run of a drafter-window record, in the record's order."""
    return [run_row(r, edge) for r in doc["runs"]]


def recovery(doc: Mapping, family: str, temperature: float, method: str, window: int, sinks: int = 0,
             edge: int = EDGE) -> list[dict]:
    """Per prompt set: ``method``'s tau before and after ``edge`` attending every position and with the window,
    EAGLE-3's tau after ``edge`` both ways (None where not run), the share of ``method``'s steps past ``edge`` that
    start on repeated text (attending every position: how much of what it drafts there is copying), and whether
    ``method``'s two texts were the same (greedy: they must be)."""
    rs = [r for r in rows(doc, edge) if r["family"] == family and r["temperature"] == temperature]
    runs = {(r["prompt_set"], r["method"], r["window"], r["sinks"]): r for r in rs}
    raw = {(r["prompt_set"], r["method"], r["window"], r.get("sinks", 0)): r for r in doc["runs"]
           if r["family"] == family and r["temperature"] == temperature}
    out = []
    for ps in dict.fromkeys(r["prompt_set"] for r in rs):
        full, win = runs.get((ps, method, None, 0)), runs.get((ps, method, window, sinks))
        e3, e3_win = runs.get((ps, "eagle3", None, 0)), runs.get((ps, "eagle3", window, 0))
        if full is None or win is None:
            continue
        same = raw[(ps, method, None, 0)]["outputs_sha256"] == raw[(ps, method, window, sinks)]["outputs_sha256"]
        out.append({"prompt_set": ps, "before_all": full["tau_before"], "after_all": full["tau_after"],
                    "before_window": win["tau_before"], "after_window": win["tau_after"],
                    "eagle3_before_all": None if e3 is None else e3["tau_before"],
                    "eagle3_after_all": None if e3 is None else e3["tau_after"],
                    "eagle3_after_window": None if e3_win is None else e3_win["tau_after"],
                    "repeated_share_after": full["repeated_share_after"], "same_text": same})
    return out


def window_ladder(doc: Mapping, family: str = "v3", temperature: float = 0.0, method: str = "peagle",
                  edge: int = EDGE) -> list[dict]:
    """tau after ``edge`` per window (None: all slots), per prompt set, sinks 0: where the drop sets in."""
    rs = [r for r in rows(doc, edge) if r["family"] == family and r["temperature"] == temperature
          and r["method"] == method and r["sinks"] == 0]
    windows = sorted({r["window"] for r in rs}, key=lambda w: float("inf") if w is None else w)
    return [{"window": w, **{r["prompt_set"]: r["tau_after"] for r in rs if r["window"] == w}} for w in windows]
