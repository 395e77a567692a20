"""``peagle-nb check-notebooks``: the hygiene gates, without executing anything."""

from __future__ import annotations


def add_arguments(p) -> None:
    p.add_argument("paths", nargs="*", help="notebooks to check (default: the whole series)")


def run(args) -> int:
    from pathlib import Path

    from peagle_nb.files import paths
    from peagle_nb.lab.notebooks.hygiene import check_notebook, check_series

    targets = [Path(p) for p in args.paths] or sorted(paths.notebooks_dir().glob("*.ipynb"))
    missing = [str(t) for t in targets if not t.is_file()]
    if missing:
        raise FileNotFoundError(f"no notebook at {', '.join(missing)}. Fix: pass .ipynb files (e.g. "
                                f"notebooks/01_speculative_decoding_basics.ipynb), or nothing to check the series.")
    problems = [p for t in targets for p in check_notebook(t)]
    if not args.paths:
        problems += check_series(paths.notebooks_dir(), paths.repo_root() / "README.md")
    for p in problems:
        print(p)
    print(f"{len(targets)} notebook(s) checked, {len(problems)} problem(s)")
    return 1 if problems else 0
