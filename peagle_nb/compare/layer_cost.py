"""A forward pass's cost per layer, measured from the suite's own step phases (explained in notebook 07).

On a GPU a small pass is bound by its kernels, not its arithmetic: replayed as a CUDA graph, each layer adds its
chain of small kernels. The lean engine's phases (``phases`` of ``data/results/engine_h200.json``) time three
passes of the same width with different depths: EAGLE-3's drafting at K=1 (its one-layer head, one pass),
P-EAGLE's drafting at K=1 (its four-layer head, one pass of two rows) and the plain decoding step (the target's
layers, one row). A straight line through the two heads' passes over their layer counts gives the cost per layer
(slope) and per pass (intercept); the target's step, predicted from that line and compared with its measured
time, checks that the line describes a pass in general and not just these two.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from peagle_nb.analysis import step_phases


def per_layer_cost(phases: Sequence[Mapping], head_layers: Mapping[str, int], target_layers: int | None = None
                   ) -> dict[str, float]:
    """``per_layer_ms`` and ``per_pass_ms`` from the heads' one-pass drafting phases (K=1) over their layer counts
    (``head_layers``: ``{"eagle3": 1, "peagle": 4}``, the ``model.heads.*.layers`` of a results file). With
    ``target_layers``: ``target_predicted_ms`` (``per_pass_ms + target_layers x per_layer_ms``) beside
    ``target_measured_ms`` (the plain step) and their relative ``target_error``."""
    points = {}
    for method in ("eagle3", "peagle"):
        per_k = step_phases.draft_ms_per_k(phases, method)
        if 1 not in per_k or method not in head_layers:
            raise ValueError(f"the cost per layer needs {method}'s drafting phase at K=1 and its layer count; have K "
                             f"{sorted(per_k)} and layers {dict(head_layers)}. Fix: use a results file whose "
                             "phases include K=1 (peagle-nb eval --sweep records them)")
        points[int(head_layers[method])] = per_k[1]
    if len(points) < 2:
        raise ValueError(f"the two heads have the same depth ({dict(head_layers)}): no cost per layer to separate")
    fit = step_phases.linear_fit(list(points), list(points.values()))
    out = {"per_layer_ms": fit["slope"], "per_pass_ms": fit["intercept"],
           "eagle3_pass_ms": points[int(head_layers["eagle3"])], "peagle_pass_ms": points[int(head_layers["peagle"])]}
    if target_layers:
        predicted = fit["intercept"] + target_layers * fit["slope"]
        measured = step_phases.step_ms(step_phases.find_row(phases, "none"))
        out.update(target_layers=target_layers, target_predicted_ms=predicted, target_measured_ms=measured,
                   target_error=predicted / measured - 1)
    return out


def gpu_per_layer_ms(docs: Sequence[Mapping]) -> float | None:
    """The cost per layer of the first engine results file measured on a GPU with step phases among ``docs``
    (``None`` when there is none: the caller then fits ``f``)."""
    for doc in docs:
        heads = doc.get("model", {}).get("heads", {})
        if doc.get("source") == "engine" and doc.get("machine", {}).get("cuda") and doc.get("phases") and \
                all(m in heads for m in ("eagle3", "peagle")):
            return per_layer_cost(doc["phases"], {m: h["layers"] for m, h in heads.items()})["per_layer_ms"]
    return None
