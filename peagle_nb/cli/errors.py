"""How ``peagle-nb`` reports bad input: one paragraph naming the problem and the fix, exit code 2, no traceback
(``PEAGLE_NB_TRACEBACK=1`` shows it). Commands raise ``ValueError`` / ``OSError`` (missing or unreadable files,
a refused connection) or ``SystemExit("message")``; ``main`` turns them into that paragraph."""

from __future__ import annotations

import argparse
import os
import sys

# What a user's input can cause (checkpoint, results, prompt and engine errors are ValueErrors); anything else
# is a bug and keeps its traceback.
USER_ERRORS = (ValueError, OSError)
EXIT_BAD_INPUT = 2


def report(command: str, message: str) -> int:
    """Print ``message`` as one paragraph on stderr; return the bad-input exit code."""
    if os.environ.get("PEAGLE_NB_TRACEBACK"):
        raise
    paragraph = " ".join(line.strip() for line in str(message).strip().splitlines() if line.strip())
    print(f"peagle-nb {command}: error: {paragraph}", file=sys.stderr)
    return EXIT_BAD_INPUT


def positive_int(text: str) -> int:
    """argparse type: an integer >= 1 (K, counts, sizes)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} must be >= 1")
    return value
