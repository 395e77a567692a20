"""``peagle-nb``: the command-line face of the package (the notebooks are the other face).

Each subcommand lives in its own module under ``peagle_nb.cli`` with ``add_parser(subparsers)`` and
``run(args) -> int``; modules are imported lazily so ``peagle-nb env`` works even when optional
extras (vLLM, SageMaker) are missing.
"""

from __future__ import annotations

import argparse
import importlib
import sys

# (subcommand, module, one-line help). Add a line here when adding a subcommand module.
COMMANDS: list[tuple[str, str, str]] = [
    ("env", "peagle_nb.cli.env_cmd", "what this machine can run (GPU, Triton, vLLM, SageMaker, AWS)"),
    ("run-notebooks", "peagle_nb.cli.run_notebooks_cmd", "execute the notebook series with papermill"),
    ("check-notebooks", "peagle_nb.cli.check_notebooks_cmd", "hygiene gates for committed notebooks"),
    ("sagemaker", "peagle_nb.cli.sagemaker_cmd", "SageMaker AI: plan / local / deploy / invoke / cleanup --tag"),
    ("eval", "peagle_nb.cli.eval_cmd", "measure none / EAGLE-3 / P-EAGLE decoding on a prompt file (--json, --sweep)"),
    ("serve", "peagle_nb.cli.serve_cmd",
     "a vLLM OpenAI-compatible server for a preset (tiny or public P-EAGLE/EAGLE-3 heads)"),
    ("bench", "peagle_nb.cli.bench_cmd", "benchmark an OpenAI-compatible endpoint: TTFT, TPOT, tok/s, acceptance"),
    ("kernels-bench", "peagle_nb.cli.kernels_bench_cmd",
     "verify and benchmark the Triton drafting kernels (GPU; CPU: interpreter dry run)"),
    ("train", "peagle_nb.cli.train_cmd", "train the tiny target, EAGLE-3 and P-EAGLE models (--smoke: CPU, < 1 min)"),
    ("advise", "peagle_nb.cli.advise_cmd",
     "best-K advisor: which drafter and K per concurrency, from data/results/ (notebook 07)"),
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="peagle-nb", description="P-EAGLE notebook suite tools")
    from peagle_nb import __version__

    parser.add_argument("--version", action="version", version=f"peagle-nb {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name, module, help_text in COMMANDS:
        mod = importlib.import_module(module)
        p = sub.add_parser(name, help=help_text, description=help_text)
        mod.add_arguments(p)
        p.set_defaults(_run=mod.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    from peagle_nb.machine import runtime_env
    from peagle_nb.cli import errors

    runtime_env.apply_defaults()
    args = build_parser().parse_args(argv)
    try:
        return int(args._run(args) or 0)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except SystemExit as exc:
        if isinstance(exc.code, str):  # a command's own "stop here, because ..."
            return errors.report(args.command, exc.code)
        raise
    except errors.USER_ERRORS as exc:
        return errors.report(args.command, str(exc))


if __name__ == "__main__":
    sys.exit(main())
