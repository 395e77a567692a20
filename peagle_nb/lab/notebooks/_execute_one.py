"""Child-process entry point used by runner.execute_notebook: run one notebook with papermill.

A SIGTERM from the parent (per-notebook timeout or Ctrl-C) is turned into KeyboardInterrupt so
papermill's cleanup shuts the kernel down instead of leaving it orphaned.
"""

from __future__ import annotations

import json
import signal
import sys


TIMEOUT_EXIT = 124


def _terminate(signum, frame):
    raise KeyboardInterrupt(f"stopped by signal {signum}")


def main(argv: list[str]) -> int:
    src, dst, params_json, timeout_s = argv
    signal.signal(signal.SIGTERM, _terminate)
    import papermill as pm

    pm.execute_notebook(
        src,
        dst,
        parameters=json.loads(params_json),
        kernel_name="python3",
        execution_timeout=int(timeout_s),
        progress_bar=False,
        log_output=True,
        cwd=str(__import__("pathlib").Path(src).parent),
    )
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except KeyboardInterrupt as exc:
        print(f"interrupted: {exc}", file=sys.stderr)
        sys.exit(130)
    except Exception as exc:  # noqa: BLE001 - papermill's PapermillExecutionError names the cell; the parent reads it
        print(f"{type(exc).__name__}: {exc}", file=sys.stderr)
        sys.exit(TIMEOUT_EXIT if "Timeout" in type(exc).__name__ else 1)
