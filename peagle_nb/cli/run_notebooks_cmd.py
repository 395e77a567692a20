"""``peagle-nb run-notebooks [--smoke | --full] [--only NN ...] [--out DIR]``."""

from __future__ import annotations


def add_arguments(p) -> None:
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--smoke", action="store_true",
                      help="small configuration that runs on a 2-core CPU, every notebook")
    mode.add_argument("--full", action="store_true", help="full configuration, every notebook")
    p.add_argument("--only", nargs="+", metavar="NN", help="run only these notebooks (numbers or names)")
    p.add_argument("--out", default="build/notebooks",
                   help="folder for executed notebooks, summary.json and report.html")
    p.add_argument("--fail-fast", action="store_true", help="stop at the first failing notebook")
    p.add_argument("--timeout-scale", type=float, default=1.0, help="multiply every notebook's time budget")
    p.add_argument("--no-report", action="store_true", help="skip the HTML report of the executed series")


def run(args) -> int:
    try:
        import papermill  # noqa: F401
    except ImportError:
        print("papermill is missing: install the notebooks extra (pip install -e '.[notebooks]')")
        return 2
    from peagle_nb.lab.notebooks.runner import run_series

    smoke = True if args.smoke else False if args.full else None  # None: each notebook's default here
    summary = run_series(smoke, args.out, args.only, args.fail_fast, args.timeout_scale,
                         report=not args.no_report)
    print(f"summary: {args.out}/summary.json")
    if summary.get("report"):
        print(f"report: {summary['report']} (open it in any browser; works offline)")
    if summary["failed"]:
        for nb in summary["notebooks"]:
            if nb["status"] != "ok":
                print(f"FAILED {nb['notebook']}: {nb['error']}")
        return 1
    print(f"all {len(summary['notebooks'])} notebook(s) ran ({summary['mode']} mode)")
    return 0
