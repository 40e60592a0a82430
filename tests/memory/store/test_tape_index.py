"""The conversation index in rumi.db follows the tapes: caught up incrementally, a torn line
waits, a replaced, shortened or removed tape is indexed again, chats never see each other's
messages, and the doctor's cross-check names every mismatch."""

from __future__ import annotations

import json
from pathlib import Path

from rumi.context.tape import Tape, event
from rumi.memory.store.tape_index import TapeIndex, count_messages, cross_check
from rumi.paths import ChatPaths
from tests.memory.backends import sqlite_only_kw


def line(msg_id: int, content: str, role: str = "user", day: str = "2026-06-01") -> str:
    return json.dumps({"id": msg_id, "timestamp": f"{day}T10:00:00Z", "role": role,
                       "content": content}, ensure_ascii=False) + "\n"


async def say(tape: Tape, msg_id: int, content: str, role: str = "user") -> None:
    await tape.append({"id": msg_id, "timestamp": "2026-06-01T10:00:00Z", "role": role,
                       "content": content})


async def texts(index: TapeIndex, chat: str, query: str) -> list[str]:
    return [f"{hit.ref} {hit.text}" for hit in await index.search(chat, query, 20)]


async def test_caught_up_incrementally_and_only_what_was_said(kw_store, data_dir):
    paths = ChatPaths(data_dir, "1")
    tape = Tape(paths.tape)
    index = TapeIndex(data_dir, kw_store.tape_db)
    await say(tape, 1, "Mi gata se llama Luna")
    await say(tape, 2, "¡Qué nombre tan bonito!", "assistant")
    assert await index.sync("1") == 2
    assert await index.sync("1") == 0                     # nothing new, nothing read twice
    await tape.append({"id": 3, "role": "tool", "content": "Luna 42", "name": "shell"})
    await tape.append(event("recall", ids=[1]))
    await say(tape, 4, "Luna duerme en el sofá")
    assert await texts(index, "1", "luna") == ["4 Luna duerme en el sofá",
                                               "1 Mi gata se llama Luna"]
    assert await index.sync("1") == 0
    assert await texts(index, "1", "sofa") == ["4 Luna duerme en el sofá"]   # accents
    assert await texts(index, "1", "gat llam") == ["1 Mi gata se llama Luna"]  # prefixes
    assert len(await texts(index, "1", '"Luna*" -(:')) == 2   # operators are only words
    assert await texts(index, "2", "luna") == []             # another chat sees nothing


async def test_a_torn_line_waits_until_it_is_whole(kw_store, data_dir):
    paths = ChatPaths(data_dir, "1")
    paths.smma.mkdir(parents=True)
    whole = line(1, "Empiezo cerámica el martes")
    paths.tape.write_text(whole[:20], encoding="utf-8")
    index = TapeIndex(data_dir, kw_store.tape_db)
    assert await index.sync("1") == 0
    with open(paths.tape, "a", encoding="utf-8") as fh:
        fh.write(whole[20:])
    assert await index.sync("1") == 1
    assert await texts(index, "1", "ceramica") == ["1 Empiezo cerámica el martes"]


async def test_a_replaced_shortened_or_removed_tape_is_indexed_again(kw_store, data_dir):
    paths = ChatPaths(data_dir, "1")
    paths.smma.mkdir(parents=True)
    paths.tape.write_text(line(1, "Vivo en Lima") + line(2, "Tengo un loro"), encoding="utf-8")
    imported = paths.smma / "imported_session_log_20260101000000.jsonl"
    imported.write_text(line(1, "Antes vivía en Cusco", day="2025-01-01"), encoding="utf-8")
    index = TapeIndex(data_dir, kw_store.tape_db)
    assert await index.sync("1") == 3
    assert await index.check() == ([], [])
    assert await texts(index, "1", "cusco") == ["imp20260101000000:1 Antes vivía en Cusco"]

    # a restore put another tape in its place
    paths.tape.write_text(line(1, "Vivo en Quito"), encoding="utf-8")
    problems, _ = await index.check()
    assert problems and "replaced since it was indexed" in problems[0]
    await index.sync("1")
    assert await texts(index, "1", "lima") == []
    assert await texts(index, "1", "quito") == ["1 Vivo en Quito"]

    # the same first line, but shorter than what was indexed
    paths.tape.write_text(line(1, "Vivo en Quito") + line(2, "Tengo un perro"),
                          encoding="utf-8")
    await index.sync("1")
    paths.tape.write_text(line(1, "Vivo en Quito"), encoding="utf-8")
    problems, _ = await index.check()
    assert problems == ["chat 1 tape session_log: 2 messages indexed, only 1 on disk"]
    await index.sync("1")
    assert await texts(index, "1", "perro") == []

    # an imported tape removed by hand
    imported.unlink()
    problems, _ = await index.check()
    assert problems == ["chat 1 tape imp20260101000000: 1 messages indexed, the tape is gone"]
    await index.sync("1")
    assert await texts(index, "1", "cusco") == []
    assert await index.check() == ([], [])


async def grown_after_indexing(store, data_dir: Path) -> tuple[ChatPaths, TapeIndex]:  # noqa: ANN001
    """Chat 7's tape: one message indexed, a second one written after."""
    paths = ChatPaths(data_dir, "7")
    tape = Tape(paths.tape)
    index = TapeIndex(data_dir, store.tape_db)
    await say(tape, 1, "uno")
    await index.sync_all()
    await say(tape, 2, "dos")
    return paths, index


async def test_messages_not_indexed_yet_are_a_note_not_a_mismatch(kw_store, data_dir):
    paths, index = await grown_after_indexing(kw_store, data_dir)
    assert count_messages(paths.tape) == 2
    assert await index.check() == (
        [], ["chat 7 tape session_log: 1 of 2 messages not indexed yet"])
    assert await index.sync_all() == {"7": 1}


@sqlite_only_kw
async def test_the_doctors_cross_check_reads_rumi_db_without_opening_the_store(kw_store,
                                                                                data_dir):
    paths, _ = await grown_after_indexing(kw_store, data_dir)
    assert cross_check(data_dir / "rumi.db", data_dir) == (
        [], ["chat 7 tape session_log: 1 of 2 messages not indexed yet"])
    paths.tape.write_text(line(1, "otro"), encoding="utf-8")
    problems, _ = cross_check(data_dir / "rumi.db", data_dir)
    assert problems and "replaced since it was indexed" in problems[0]
