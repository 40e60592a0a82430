"""The start-up/doctor cross-check of MEMORY.md against rumi.db reads each file with the same
4 MB bound as every other MEMORY.md read: a huge file is reported, not loaded into RAM, and
left exactly as it was (issue 26: a 202 MB MEMORY.md cost 1.6 GB at start)."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

from rumi.memory.files.healing import cross_check
from rumi.memory.files.markdown_disk import MAX_FILE_BYTES
from rumi.memory.store.schema import connect
from rumi.messages import format_number
from rumi.paths import ChatPaths


async def test_huge_memory_md_is_reported_without_being_read_whole(tmp_path: Path) -> None:
    db_path = tmp_path / "rumi.db"
    await (await connect(db_path)).close()
    md = ChatPaths(tmp_path, "42").memory_md
    md.parent.mkdir(parents=True)
    line = b"- [fact] el loro se llama Pancracio\n"
    data = line * (5 * MAX_FILE_BYTES // len(line))
    md.write_bytes(data)

    tracemalloc.start()
    try:
        problems = cross_check(db_path, tmp_path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    assert len(problems) == 1 and "chat 42" in problems[0]
    assert (format_number(len(data)) in problems[0]
            and format_number(MAX_FILE_BYTES) in problems[0])
    assert peak < 3 * MAX_FILE_BYTES  # the file is 5x that; the old read held it whole, twice
    assert md.read_bytes() == data
