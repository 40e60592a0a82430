"""benchmarks/startup_cost.py's small case end to end: three real starts, one JSON object."""

from __future__ import annotations

import json
import sys

import pytest

from tests.conftest import REPO

sys.path.insert(0, str(REPO / "benchmarks"))
import startup_cost as bench  # noqa: E402


def test_small_case_measures_the_three_starts_it_names(
        capsys: pytest.CaptureFixture[str]) -> None:
    """Each start really did its job: the upgrade indexed every tape, the restart found the
    database sound, the start without rumi.db read every memory back from MEMORY.md."""
    result = bench.main(["--small"])
    printed = json.loads(capsys.readouterr().out)
    assert printed == result
    chats, memories, messages = 2, 50, 500
    assert (result["chats"], result["memories_per_chat"], result["messages_per_chat"]) == (
        chats, memories, messages)
    searched = chats * messages * 4 // 5   # every fifth line is a tool result, not indexed
    starts = result["starts"]
    assert set(starts) == {"first_after_upgrade", "restart_unchanged", "after_rumi_db_deleted"}
    upgrade, restart, lost = (starts[k] for k in
                              ("first_after_upgrade", "restart_unchanged",
                               "after_rumi_db_deleted"))
    assert (upgrade["indexed_messages_before"], upgrade["indexed_messages_after"]) == (
        0, searched)
    assert upgrade["db_state"] == restart["db_state"] == "ok"
    assert restart["rebuilt_memories"] == restart["reindexed_messages"] == 0
    assert lost["db_state"] == "missing"
    assert lost["rebuilt_memories"] == chats * memories
    assert lost["reindexed_messages"] == lost["indexed_messages_after"] == searched
    for row in starts.values():
        for key in ("imports_s", "build_app_s", "start_s", "ready_s", "stop_s",
                    "process_wall_s", "peak_rss_mb"):
            assert isinstance(row[key], float) and row[key] >= 0, key
        assert row["ready_s"] <= row["process_wall_s"]
    for block in ("alone_before_index", "alone_after_index"):
        assert set(result[block]) == {"quick_check_s", "cross_check_s"}
    assert set(result["rebuild_parts_alone"]) == {"memory_md_rebuild_s", "tape_reindex_s"}
    assert result["embeddings"] == "off"
    data = result["data_dir"]
    assert data["rumi_db_bytes_indexed"] > data["rumi_db_bytes"] > 0
    assert data["tape_bytes"] > 0 and data["memory_md_bytes"] > 0
    assert len(result["load_average"]) == 3
