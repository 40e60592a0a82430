"""Command-line pieces the benchmark scripts share (each script runs with this directory first
on `sys.path`, so `from _cli import ...` works from the repository root and from tests).

Importing it also puts this checkout right after that directory: a benchmark measures the
`rumi` beside it, not whichever one the venv's editable install points at (a run of a newer
benchmark over another checkout's older `rumi` migrated that one's schema and then failed in
`ANALYZE rumi.word_stats`, a table it did not have). Import it before `rumi`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if sys.path[1:2] != [str(REPO)]:
    sys.path.insert(1, str(REPO))


def positive(text: str) -> int:
    """An argparse type: a count that must be at least 1 (a p95 of zero samples means nothing)."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value
