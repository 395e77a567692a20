"""``peagle-nb kernels-bench``: verify and benchmark the Triton kernels, write data/results/kernels_<device>.json.

On a GPU it runs the full sweep (about a minute on an H200). Without one it re-runs itself in a child
process with ``TRITON_INTERPRET=1`` (which must be set before triton is first imported, and this CLI
may already have imported it) as a dry run at tiny sizes. Explained in notebook 04.
"""

from __future__ import annotations

import os
import subprocess
import sys


def add_arguments(p) -> None:
    from peagle_nb.lab.benchmarks.kernel_bench import add_arguments as bench_arguments

    bench_arguments(p)


def run(args) -> int:
    import torch

    from peagle_nb.lab.benchmarks import kernel_bench

    if torch.cuda.is_available() or os.environ.get("TRITON_INTERPRET") == "1":
        return kernel_bench.run(args)
    if args.repeat_into is not None:  # checked here too: the child below would report it after its own start-up
        kernel_bench.check_repeat_target(args.repeat_into)
    argv = [sys.executable, "-m", "peagle_nb.lab.benchmarks.kernel_bench"]
    if args.out is not None:
        argv += ["--out", str(args.out)]
    for flag, value in (("--batch-sizes", args.batch_sizes), ("--ks", args.ks)):
        if value:
            argv += [flag, *map(str, value)]
    if args.hidden_size:
        argv += ["--hidden-size", str(args.hidden_size)]
    if args.smoke:
        argv.append("--smoke")
    if args.repeat_into is not None:
        argv += ["--repeat-into", str(args.repeat_into)]
    print("no GPU: running the kernels under Triton's interpreter (TRITON_INTERPRET=1) at dry-run sizes", flush=True)
    return subprocess.run(argv, env={**os.environ, "TRITON_INTERPRET": "1"}).returncode
