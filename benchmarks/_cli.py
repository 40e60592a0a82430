"""Command-line pieces the benchmark scripts share (each script runs with this directory first
on `sys.path`, so `from _cli import ...` works from the repository root and from tests)."""

from __future__ import annotations

import argparse


def positive(text: str) -> int:
    """An argparse type: a count that must be at least 1 (a p95 of zero samples means nothing)."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value
