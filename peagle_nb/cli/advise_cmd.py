"""``peagle-nb advise``: the best-K advisor of notebook 07 on the command line.

    peagle-nb advise                                  # every scenario from data/results/
    peagle-nb advise --results my_bench.json --concurrency 1 4 16 --json
    peagle-nb advise --published                      # GPT-OSS-20B on B200, from the published numbers
"""

from __future__ import annotations

import json


def add_arguments(p) -> None:
    p.add_argument("--results", nargs="+", metavar="FILE",
                   help="results files (peagle_nb/files/results.py schema); default: every file in data/results/")
    p.add_argument("--published", action="store_true", help="only the GPT-OSS-20B scenarios from published.json")
    p.add_argument("--concurrency", nargs="+", type=int, metavar="C",
                   help="concurrencies to advise for (default: 1 2 4 8 measured, 1 4 16 64 published)")
    p.add_argument("--json", action="store_true", help="print JSON rows instead of a table")


def advise_rows(docs: list[dict], published_only: bool = False, concurrency: list[int] | None = None) -> list[dict]:
    """One row per scenario and concurrency (the advisor's columns plus ``scenario``)."""
    from peagle_nb.compare.layer_cost import gpu_per_layer_ms
    from peagle_nb.compare.scenario import measured_scenarios, published_scenarios

    scenarios = {}
    per_layer_ms = gpu_per_layer_ms(docs)  # measured on a GPU when the results hold such a sweep, else fitted
    if not published_only:
        scenarios.update(measured_scenarios(docs, concurrency or (1, 2, 4, 8)))
    for doc in docs:
        if doc["source"] == "published":
            scenarios.update({s.name: s for s in published_scenarios(doc, concurrency or (1, 4, 16, 64),
                                                                       per_layer_ms=per_layer_ms).values()})
    if not scenarios:
        raise ValueError("nothing to advise on: no measured engine sweep with draft/verify timings and no "
                         "published.json among the results given (see data/results/README.md)")
    return [{"scenario": name, **row} for name, scn in scenarios.items() for row in scn.advice()]


def run(args) -> int:
    from peagle_nb.compare.data import load_results
    from peagle_nb.files.results import ResultsFormatError

    try:
        docs = load_results(args.results) if args.results else load_results()
        rows = advise_rows(docs, args.published, args.concurrency)
    except (ResultsFormatError, ValueError) as exc:
        print(f"error: {exc}")
        return 2
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    last = None
    for r in rows:
        if r["scenario"] != last:
            print(f"\n{r['scenario']}\n  {'conc':>4}  {'EAGLE-3 K':>9}  {'P-EAGLE K':>9}  {'P/E3':>5}  advice")
            last = r["scenario"]
        ratio = f"{r['peagle_over_eagle3']:.2f}" if "peagle_over_eagle3" in r else "-"
        print(f"  {r['concurrency']:>4}  {r.get('eagle3_best_k', '-'):>9}  {r.get('peagle_best_k', '-'):>9}  "
              f"{ratio:>5}  {r['recommendation']}")
    return 0
