"""``peagle-nb serve --preset NAME [--k K] [--port P]``: a vLLM OpenAI-compatible server for a preset,
until Ctrl-C (the server and its children are always stopped)."""

from __future__ import annotations

import json
import shlex
import signal
import sys
import time


def add_arguments(p) -> None:
    from peagle_nb.cli.errors import positive_int
    from peagle_nb.serving.presets import PRESETS

    p.add_argument("--preset", required=True, choices=sorted(PRESETS), help="target + head + K + engine flags")
    p.add_argument("--k", type=positive_int, default=None, help="num_speculative_tokens (default: the preset's)")
    p.add_argument("--port", type=positive_int, default=None, help="port on 127.0.0.1 (default: a free one)")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--startup-timeout", type=float, default=600)
    p.add_argument("--log", default=None, help="server log file (default: a temp file)")
    p.add_argument("--dry-run", action="store_true", help="print the command and exit")
    p.add_argument("extra", nargs="*", help="extra vLLM arguments after --")


def run(args) -> int:
    from peagle_nb.serving.config import server_args
    from peagle_nb.serving.presets import get_preset, local_models_ready
    from peagle_nb.serving.server import ManagedVllmServer, check_port_free

    preset = get_preset(args.preset)
    if preset.local and not local_models_ready(preset) and not args.dry_run:
        raise FileNotFoundError(f"{preset.name} needs {preset.target_path()} and {preset.head_path()}. Fix: train "
                                f"them with `peagle-nb train` (see README 'Data and the tiny target').")
    vargs = server_args(preset, k=args.k, extra=args.extra)  # checks the head against the target, and K
    if args.port is not None and not args.dry_run:
        check_port_free(args.host, args.port)
    srv = ManagedVllmServer(vargs, host=args.host, port=args.port, startup_timeout_s=args.startup_timeout,
                            log_path=args.log)
    print("command:", shlex.join(srv.command))
    if preset.needs_gpu:
        print(f"note: {preset.name} needs a GPU with >= {preset.gpu_memory_gib} GiB ({preset.notes})")
    if args.dry_run:
        return 0

    def _term(signum, frame):  # SIGTERM -> the same clean path as Ctrl-C
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, _term)
    with srv:
        print(f"ready after {srv.startup_s:.0f} s: {srv.openai_base_url} (model {srv.model!r}); log {srv.log_path}")
        print("Ctrl-C to stop", flush=True)
        try:
            while srv.is_running():
                time.sleep(1)
        except KeyboardInterrupt:
            from peagle_nb.serving.metrics import read_spec_decode_metrics

            try:
                print(json.dumps(read_spec_decode_metrics(srv.base_url)))
            except Exception:  # noqa: BLE001
                pass
            print("stopping", file=sys.stderr)
            return 0
    print(f"server exited on its own; log tail:\n{srv.log_tail()}", file=sys.stderr)
    return 1
