"""benchmarks/import_cost.py: what it reports is what a fresh interpreter imported."""

from __future__ import annotations

import sys

from tests.conftest import REPO

sys.path.insert(0, str(REPO / "benchmarks"))
import import_cost as bench  # noqa: E402


def test_an_import_is_timed_in_a_fresh_interpreter_with_its_modules_counted() -> None:
    row = bench.measure("import rumi.config", 2)
    assert row["rumi_modules"] >= 2 and row["modules"] > row["rumi_modules"]
    assert 0 < row["import_wall_ms"] <= row["process_wall_ms"]
    assert row["import_cpu_ms"] > 0 and len(row["import_wall_ms_all"]) == 2
    assert row["rumi_path"] == str(REPO / "rumi" / "__init__.py")   # this checkout's
    nothing = bench.measure("import rumi", 1)   # the package alone: no config, no pydantic
    assert nothing["rumi_modules"] == 1 and nothing["modules"] < row["modules"]


def test_roots_name_the_packages_rumi_modules_import_first() -> None:
    found = {r["package"]: r["ms"] for r in bench.roots("import rumi.config", 50)}
    assert found["pydantic <- rumi.config"] > 0
    assert not any(name.startswith("rumi") for name in found)   # only third-party packages


def test_a_set_up_runs_before_the_timed_statement_in_the_same_interpreter() -> None:
    """The tokenizer target imports Rumi first (as the bot has by then) and times the load."""
    row = bench.measure("import sys; assert 'rumi.config' in sys.modules", 1,
                        setup="import rumi.config")
    assert row["rumi_modules"] >= 2   # the statement's own assert passed in the child
