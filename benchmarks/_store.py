"""The vector index the benchmarks open their stores with: the bot's own (`from _store import
bot_index`; import `_cli` first, so that it is this checkout's `rumi`)."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

from rumi.config import MemorySettings
from rumi.memory.vectors.embeddings import Embedder
from rumi.memory.vectors.index import VectorIndex


def bot_index(data: Path, embedder: Embedder, settings: MemorySettings) -> VectorIndex:
    """`data/vectors`, labelled and saved exactly as the bot's store does it
    (`VectorIndex.of_data_dir`), so what a benchmark builds is what the bot builds.

    A database kept from an earlier run (`--data`) whose vectors carry another label is
    refused in one line: the store would take them for missing vectors and re-embed them a
    batch per recall, inside the timed samples (a kept database filled before the benchmarks
    labelled vectors like the bot has `<model>` where the bot writes `<model>+asked-before-1`).
    """
    index = VectorIndex.of_data_dir(data, embedder, settings)
    others = _other_labels(data / "rumi.db", index.model_name)
    if others:
        raise SystemExit(
            f"{data} holds vectors labelled {', '.join(sorted(others))}, not "
            f"{index.model_name} as the bot writes them: fill it again (remove it and run "
            "with the same --data) so that no recall re-embeds while it is timed")
    return index


def _other_labels(db: Path, label: str) -> set[str]:
    """The vector labels in `db` other than `label` (none when there is no database yet)."""
    if not db.exists():
        return set()
    with closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as conn:
        try:
            rows = conn.execute("SELECT DISTINCT model FROM memory_embeddings").fetchall()
        except sqlite3.OperationalError:   # a database without the table has no vectors
            return set()
    return {row[0] for row in rows} - {label}
