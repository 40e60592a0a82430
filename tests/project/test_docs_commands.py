"""docs/configuration.md lists every `rumi` command and every action of the grouped ones, as
`rumi --help` has them (issue 33: setup, pairing, sandbox, models, memory, export and import
were missing)."""

from __future__ import annotations

import argparse
from pathlib import Path

from rumi.cli import build_parser

REPO = Path(__file__).resolve().parents[2]


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:   # argparse keeps its sub-parsers only here
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def test_the_command_list_names_every_command_and_action() -> None:
    text = (REPO / "docs" / "configuration.md").read_text(encoding="utf-8")
    listed = text[text.index("## Commands"):]
    listed = listed[:listed.find("\n## ", 1) if "\n## " in listed[1:] else None]
    missing = []
    for name, parser in _subcommands(build_parser()).items():
        if f"`rumi {name}" not in listed:
            missing.append(name)
        for action in _subcommands(parser):
            if f" {action}" not in listed.split(f"`rumi {name}", 1)[-1].split("\n- ", 1)[0]:
                missing.append(f"{name} {action}")
    assert not missing, f"docs/configuration.md's command list lacks: {missing}"
