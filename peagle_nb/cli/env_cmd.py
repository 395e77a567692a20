"""``peagle-nb env [--json]``: the capability report of notebook 00."""

from __future__ import annotations

import json


def add_arguments(p) -> None:
    p.add_argument("--json", action="store_true", help="print one JSON object instead of a table")


def report(caps) -> dict:
    """Capabilities plus, per notebook, whether its full configuration can run here and which mode a
    notebook left at ``SMOKE = None`` picks (``peagle_nb.notebook.modes.decide_smoke``)."""
    from peagle_nb.machine.capabilities import can_run_full
    from peagle_nb.notebook.modes import decide_smoke
    from peagle_nb.notebook.series import SERIES

    plan = []
    for spec in SERIES:
        ok, _ = can_run_full(caps, spec.full_needs)
        smoke, why = decide_smoke(spec, caps)
        plan.append({"notebook": spec.filename, "full": ok, "mode": "smoke" if smoke else "full",
                     "reason": why, "full_cost": spec.full_cost})
    return {"capabilities": caps.to_dict(), "notebooks": plan}


def format_table(rep: dict) -> str:
    c = rep["capabilities"]
    rows = [
        ("Python", f"{c['python']} on {c['platform']}, {c['cpu_count']} CPU(s)"),
        ("PyTorch", c["torch"] or "not installed"),
        ("GPU", f"{c['gpu_name']} ({c['gpu_memory_gib']} GiB)" if c["cuda_available"] else "none (CPU only)"),
        ("Triton", f"{c['triton']} ({c['triton_mode']})" if c["triton"] else "not installed"),
        ("vLLM", f"{c['vllm_build']} {c['vllm']}" if c["vllm"] else "not installed"),
        ("transformers", c["transformers"] or "not installed"),
        ("SageMaker SDK", c["sagemaker_sdk"] or "not installed"),
        ("AWS credentials", ("present" if c["aws_credentials"] else "absent")
         + (f", region {c['aws_region']}" if c["aws_region"] else ", no region set")),
    ]
    width = max(len(k) for k, _ in rows)
    lines = [f"{k.ljust(width)}  {v}" for k, v in rows]
    lines.append("")
    name_w = max(len(n["notebook"]) for n in rep["notebooks"]) + 2
    lines.append("Notebook".ljust(name_w) + "mode   why (a notebook left at SMOKE = None picks this mode)")
    for n in rep["notebooks"]:
        why = n["reason"].split(": ", 1)[-1]
        lines.append(f"{n['notebook'].ljust(name_w)}{n['mode'].ljust(7)}{why}")
    for p in c["problems"]:
        lines.append(f"WARNING: {p}")
    return "\n".join(lines)


def run(args) -> int:
    from peagle_nb.machine.capabilities import detect

    rep = report(detect())
    print(json.dumps(rep, indent=2) if args.json else format_table(rep))
    return 0
