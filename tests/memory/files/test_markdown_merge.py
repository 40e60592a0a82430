"""MEMORY.md edits made the way people really save files never lose a memory silently:
stale editor buffers, truncate-then-write, empty saves, BOM/CRLF, copied lines with their id."""

from __future__ import annotations

import asyncio
import re

from rumi.core.assistant import Assistant
from rumi.memory.files.markdown_sync import PENDING_PREFIX, MarkdownSync
from rumi.memory.store.models import MemoryStatus, MemoryType, NewMemory
from rumi.paths import ChatPaths
from tests.memory.backends import data_dir_of
from tests.memory.files.test_markdown_sync import atomic_save, eventually


async def _seed(store, chat: str = "7", n: int = 5):
    return [(await store.save(chat, NewMemory(f"Dato número {i}", key=f"dato_{i}"))).memory
            for i in range(n)]


async def _synced(store, notices=None, **kwargs):
    async def notice(chat_id, text, buttons=None):
        if notices is not None:
            notices.append((chat_id, text, buttons))

    sync = MarkdownSync(data_dir_of(store), store, on_notice=notice, **kwargs)
    await sync.write("7")
    return sync, ChatPaths(data_dir_of(store), "7").memory_md


async def _active(store, chat: str = "7") -> set[str]:
    return {m.content for m in await store.list(chat, limit=1_000)}


async def _remember(store, sync, text: str):
    """What /remember does: save, then rewrite MEMORY.md."""
    memory = (await store.save("7", NewMemory(text))).memory
    await sync.write("7")
    return memory


async def test_a_stale_buffer_saved_after_remember_keeps_the_new_memory(store):
    await _seed(store)
    sync, path = await _synced(store)
    buffer = path.read_text(encoding="utf-8")           # the editor opens the file
    await _remember(store, sync, "Tiene una tortuga")    # /remember meanwhile
    # the person deletes one line and edits another in the old buffer, then saves it
    edited = buffer.replace("Dato número 1", "Dato número uno")
    edited = re.sub(r"- \[#\d+\] \*\*dato_3\*\*: Dato número 3\n", "", edited)
    atomic_save(path, edited)
    report = await sync.sync_from_file("7")
    assert (report.added, report.changed, report.removed) == (0, 1, 1)
    active = await _active(store)
    assert "Tiene una tortuga" in active                 # not forgotten by omission
    assert "Dato número uno" in active and "Dato número 3" not in active
    assert "Tiene una tortuga" in path.read_text(encoding="utf-8")


async def test_rumis_change_since_the_copy_is_not_undone_by_an_unchanged_line(store):
    memories = await _seed(store)
    sync, path = await _synced(store)
    buffer = path.read_text(encoding="utf-8")
    await store.update("7", memories[0].id, content="Dato número cero, corregido")
    await sync.write("7")
    atomic_save(path, buffer.replace("Dato número 4", "Dato número cuatro"))
    report = await sync.sync_from_file("7")
    assert report.changed == 1
    active = await _active(store)
    assert "Dato número cero, corregido" in active and "Dato número 0" not in active
    assert "Dato número cuatro" in active


async def test_twenty_remembers_while_the_person_keeps_saving_old_copies(store):
    """The issue measured 4 and 6 of 20 forgotten; the watcher path must lose none."""
    await _seed(store)
    sync, path = await _synced(store, debounce_ms=50)
    await sync.start()
    try:
        remembered = []
        for n in range(20):
            buffer = path.read_text(encoding="utf-8")
            remembered.append(f"Recuerdo nuevo {n}")
            await _remember(store, sync, remembered[-1])
            atomic_save(path, re.sub(r"Dato número 2.*", f"Dato número 2 (v{n})", buffer))
            await asyncio.sleep(0.02)
        def settled() -> bool:   # Rumi's rewrite after the last save: both edits in it
            text = path.read_text(encoding="utf-8")
            return "Dato número 2 (v19)" in text and "Recuerdo nuevo 19" in text

        await eventually(settled)
        active = await _active(store)
        assert set(remembered) <= active and "Dato número 2 (v19)" in active
        assert all(f"Dato número {i}" in active for i in (0, 1, 3, 4))
    finally:
        await sync.stop()


async def test_truncate_then_write_is_one_edit_not_an_empty_file(store):
    """Editors that truncate and then write leave the file empty for a moment (≥ 120 ms)."""
    await _seed(store)
    notices: list = []
    sync, path = await _synced(store, notices, debounce_ms=50)
    await sync.start()
    try:
        edited = path.read_text(encoding="utf-8").replace("Dato número 0", "Dato número cero")
        with path.open("w", encoding="utf-8") as handle:   # truncate …
            handle.flush()
            await asyncio.sleep(0.3)                         # … the watcher sees it empty
            handle.write(edited)                             # … then the text arrives
        await eventually(lambda: sync.applied_edits >= 1)
        active = await _active(store)
        assert "Dato número cero" in active and len(active) == 5
        assert notices == []
    finally:
        await sync.stop()


async def test_an_empty_save_is_held_until_the_person_confirms(store):
    await _seed(store)
    notices: list = []
    sync, path = await _synced(store, notices, empty_grace_s=0.2)
    path.write_text("", encoding="utf-8")                  # select all, delete, save
    report = await sync.sync_from_file("7")
    assert report.pending and len(await _active(store)) == 5
    text = path.read_text(encoding="utf-8")
    assert all(f"Dato número {i}" in text for i in range(5))   # the file is restored
    [(chat, said, buttons)] = notices
    assert chat == "7" and "5 de 5" in said
    assert [c for _, c in buttons[0]] == ["/memorymd si", "/memorymd no"]
    [kept] = path.parent.glob(f"{PENDING_PREFIX}*")
    assert kept.read_bytes() == b"" and kept.name in said
    assert any("espera tu confirmación" in line for line in await sync.status_lines("7"))

    assert "No olvido nada" in await sync.confirm("7", False)
    assert len(await _active(store)) == 5 and await sync.status_lines("7") == []
    assert "No hay ninguna" in await sync.confirm("7", True)

    # a header-only save (everything deleted but the titles), confirmed this time
    header_only = "\n".join(ln for ln in path.read_text(encoding="utf-8").splitlines()
                            if not ln.startswith("- "))
    atomic_save(path, header_only)
    assert (await sync.sync_from_file("7")).pending
    reply = await sync.confirm("7", True)
    assert "5 olvidados" in reply and await _active(store) == set()
    assert "Dato número" not in path.read_text(encoding="utf-8")


async def test_a_few_deletions_apply_without_asking(store):
    await _seed(store, n=12)
    notices: list = []
    sync, path = await _synced(store, notices)
    text = path.read_text(encoding="utf-8")
    for i in (1, 2):
        text = re.sub(rf"- \[#\d+\] \*\*dato_{i}\*\*: Dato número {i}\n", "", text)
    atomic_save(path, text)
    report = await sync.sync_from_file("7")
    assert report.removed == 2 and not report.pending and notices == []
    # but 11 of 12 at once is held
    text = path.read_text(encoding="utf-8")
    text = re.sub(r"- \[#\d+\] \*\*dato_(?!0\*)\d+\*\*: .*\n", "", text)
    atomic_save(path, text)
    assert (await sync.sync_from_file("7")).pending
    assert len(await _active(store)) == 10


async def test_bom_and_crlf_are_accepted(store):
    await _seed(store)
    notices: list = []
    sync, path = await _synced(store, notices)
    text = path.read_text(encoding="utf-8").replace("Dato número 0", "Dato número cero")
    path.write_bytes(b"\xef\xbb\xbf" + text.replace("\n", "\r\n").encode("utf-8"))
    report = await sync.sync_from_file("7")
    assert report.error is None and report.changed == 1 and notices == []
    assert "Dato número cero" in await _active(store) and len(await _active(store)) == 5


async def test_a_copied_line_with_its_id_becomes_a_new_memory(store):
    memories = await _seed(store)
    sync, path = await _synced(store)
    text = path.read_text(encoding="utf-8")
    original = next(ln for ln in text.splitlines() if f"[#{memories[0].id}]" in ln)
    copy = original.replace("**dato_0**: Dato número 0", "**mascota**: Tiene un perro")
    atomic_save(path, text.replace(original, f"{original}\n{copy}"))
    report = await sync.sync_from_file("7")
    assert report.error is None and (report.added, report.changed) == (1, 0)
    assert (await store.get("7", memories[0].id)).content == "Dato número 0"
    [dog] = [m for m in await store.list("7", limit=50) if m.key == "mascota"]
    assert dog.content == "Tiene un perro" and dog.type == MemoryType.FACT
    # the copy placed first keeps working the same way
    text = path.read_text(encoding="utf-8")
    line = next(ln for ln in text.splitlines() if f"[#{memories[1].id}]" in ln)
    atomic_save(path, text.replace(line, f"{line.replace('Dato número 1', 'Otro')}\n{line}"))
    report = await sync.sync_from_file("7")
    assert (report.added, report.changed) == (1, 0)
    assert (await store.get("7", memories[1].id)).status == MemoryStatus.ACTIVE


async def test_a_problem_found_at_start_is_told_once_a_channel_is_up(store, tmp_path):
    """Start-up catch-up runs before any channel: the notice waits in the core's queue."""
    from tests.fakes.context import SimpleContext

    await _seed(store)
    sync, path = await _synced(store)
    atomic_save(path, path.read_text(encoding="utf-8") + "\ntexto suelto\n")
    from rumi.config import SessionSettings
    from rumi.sessions.manager import SessionManager

    sessions = SessionManager(tmp_path / "sessions-data", SessionSettings())
    assistant = Assistant(sessions, SimpleContext(), agent=None)  # type: ignore[arg-type]
    later = MarkdownSync(data_dir_of(store), store, on_notice=assistant.tell)
    await later.catch_up()                                   # no channel yet
    got: list = []

    async def outbox(chat_id, text, buttons=None):
        got.append((chat_id, text))

    assistant.set_outbox(outbox)
    assert await assistant.deliver_queued() == 1
    assert got and got[0][0] == "7" and "texto suelto" not in got[0][1]
    assert "MEMORY.md.rejected-" in got[0][1] and "línea" in got[0][1]
    assert "texto suelto" not in path.read_text(encoding="utf-8")


async def test_one_buffer_saved_after_more_writes_than_rumi_remembers(store):
    """An editor that keeps saving the same buffer while Rumi writes 25 times: its version is
    older than every remembered write, so nothing can be taken as deleted."""
    await _seed(store)
    sync, path = await _synced(store)
    buffer = path.read_text(encoding="utf-8")
    added = [f"Aprendido {n}" for n in range(25)]
    for text in added:
        await _remember(store, sync, text)
    atomic_save(path, buffer.replace("Dato número 1", "Dato número uno"))
    report = await sync.sync_from_file("7")
    assert (report.changed, report.removed, report.pending) == (1, 0, False)
    assert set(added) <= await _active(store) and "Dato número uno" in await _active(store)


async def test_without_the_version_line_only_old_memories_can_be_deleted(store):
    memories = await _seed(store)
    sync, path = await _synced(store)
    buffer = path.read_text(encoding="utf-8")
    await _remember(store, sync, "Tiene una tortuga")
    edited = "\n".join(ln for ln in buffer.splitlines()
                       if not ln.startswith("<!--") and f"[#{memories[3].id}]" not in ln)
    atomic_save(path, edited + "\n")
    report = await sync.sync_from_file("7")
    assert report.removed == 1 and not report.pending
    active = await _active(store)
    assert "Dato número 3" not in active and "Tiene una tortuga" in active


async def test_a_late_yes_forgets_exactly_what_was_asked(store):
    """Answered after Rumi wrote the file 25 more times (the edit's version is no longer
    remembered): the memories the question named are forgotten, the new ones are not."""
    await _seed(store)
    notices: list = []
    sync, path = await _synced(store, notices, empty_grace_s=0.05)
    path.write_text("", encoding="utf-8")
    assert (await sync.sync_from_file("7")).pending
    added = [f"Aprendido después {n}" for n in range(25)]
    for text in added:
        await _remember(store, sync, text)
    reply = await sync.confirm("7", True)
    assert "5 olvidados" in reply
    assert await _active(store) == set(added)
