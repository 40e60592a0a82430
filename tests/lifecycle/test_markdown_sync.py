"""MEMORY.md ⇄ store: render, edits (also by atomic rename) applied, no loop, malformed kept."""

from __future__ import annotations

import asyncio
import os
import time

import pytest

from rumi.memory.markdown_sync import MalformedMemoryFile, MarkdownSync, parse, render
from rumi.memory.models import MemorySource, MemoryStatus, MemoryType, NewMemory
from rumi.paths import ChatPaths


async def eventually(predicate, timeout: float = 15.0):
    """Poll an async/sync predicate until true (watchers are asynchronous by nature)."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if asyncio.iscoroutine(value):
            value = await value
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached before the deadline")
        await asyncio.sleep(0.05)


def atomic_save(path, text: str) -> None:
    """What VS Code & co. do: write a temp file next to it, then rename over it."""
    tmp = path.with_name(".MEMORY.md.swp-tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


async def seed(store):
    a = (await store.save("5", NewMemory("Vive en Lima", key="ciudad"))).memory
    b = (await store.save("5", NewMemory("Le gusta el café", type=MemoryType.PREFERENCE))).memory
    c = (await store.save("5", NewMemory("Usará Postgres", type=MemoryType.DECISION))).memory
    await store.save("5", NewMemory("Me equivoqué con la fecha", metadata={
        "category": "self_correction"}))
    await store.save("5", NewMemory("Fue al cine", type=MemoryType.EPISODIC))
    return a, b, c


async def test_render_groups_by_type_in_stable_order_and_skips_self_corrections(store):
    a, b, c = await seed(store)
    store_dir = store.db_path.parent
    sync = MarkdownSync(store_dir, store)
    await sync.write("5")
    text = ChatPaths(store_dir, "5").memory_md.read_text(encoding="utf-8")
    assert text.index("## Hechos") < text.index("## Preferencias") < text.index("## Decisiones")
    assert f"- [#{a.id}] **ciudad**: Vive en Lima" in text
    assert f"- [#{b.id}] Le gusta el café" in text
    assert "equivoqué" not in text and "cine" not in text
    again = render(await store.list("5", limit=100))
    assert again == text  # stable
    assert [e.memory_id for e in parse(text)] == [a.id, b.id, c.id]


async def test_edit_updates_store_and_rewrite_is_not_a_loop(store):
    a, b, c = await seed(store)
    data_dir = store.db_path.parent
    sync = MarkdownSync(data_dir, store)
    await sync.write("5")
    path = ChatPaths(data_dir, "5").memory_md
    text = path.read_text(encoding="utf-8")
    text = text.replace("Vive en Lima", "Vive en Cusco")          # change → update in place
    text = text.replace(f"- [#{c.id}] Usará Postgres\n", "")        # remove → forget
    text = text.replace("## Decisiones\n", "## Decisiones\n\n- **editor**: Usa Vim\n")  # add
    atomic_save(path, text)
    report = await sync.sync_from_file("5")
    assert (report.added, report.changed, report.removed) == (1, 1, 1)
    active = {m.content: m for m in await store.list("5", limit=50)}
    assert "Vive en Cusco" in active and "Vive en Lima" not in active
    assert active["Usa Vim"].source == MemorySource.EXPLICIT and active["Usa Vim"].key == "editor"
    edited = await store.get("5", a.id)       # same id, so a file with old ids stays valid
    assert edited.content == "Vive en Cusco" and edited.metadata["edited_from"] == ["Vive en Lima"]
    assert edited.source == MemorySource.EXPLICIT or edited.confidence == 1.0
    assert (await store.get("5", c.id)).status == MemoryStatus.DELETED
    rewritten = path.read_text(encoding="utf-8")
    assert f"[#{active['Usa Vim'].id}] **editor**: Usa Vim" in rewritten
    # the file Rumi just wrote is recognised as its own: nothing is applied again
    assert (await sync.sync_from_file("5")).ignored_own_write
    assert sync.applied_edits == 1


async def test_malformed_edit_is_reported_and_file_not_overwritten(store):
    await seed(store)
    data_dir = store.db_path.parent
    notices = []

    async def notice(chat_id, text):
        notices.append((chat_id, text))

    sync = MarkdownSync(data_dir, store, on_notice=notice)
    await sync.write("5")
    path = ChatPaths(data_dir, "5").memory_md
    broken = path.read_text(encoding="utf-8") + "\n## Cosas raras\n- algo\n"
    atomic_save(path, broken)
    report = await sync.sync_from_file("5")
    assert "sección desconocida" in report.error
    assert notices and notices[0][0] == "5" and "No tocaré el archivo" in notices[0][1]
    # the store changes, but the person's broken file is left alone
    await store.save("5", NewMemory("Tiene una bicicleta"))
    assert await sync.write("5") is False
    assert path.read_text(encoding="utf-8") == broken
    # fixing the file applies it and resumes normal sync
    atomic_save(path, broken.replace("## Cosas raras\n", ""))
    report = await sync.sync_from_file("5")
    assert report.error is None and "5" not in sync.problems
    assert "Tiene una bicicleta" in path.read_text(encoding="utf-8")


@pytest.mark.parametrize("text, reason", [
    ("## Hechos\nsolo texto\n", "no es un recuerdo"),
    ("- huérfano\n", "fuera de una sección"),
    ("## Hechos\n- [#1] a\n- [#1] b\n", "repetido"),
    ("## Hechos\n- [#3]   \n", "vacío"),
])
def test_parse_errors_name_the_line(text, reason):
    with pytest.raises(MalformedMemoryFile, match=reason):
        parse(text)


async def test_unknown_id_is_malformed(store):
    await seed(store)
    sync = MarkdownSync(store.db_path.parent, store)
    path = ChatPaths(store.db_path.parent, "5").memory_md
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("## Hechos\n- [#999] inventado\n", encoding="utf-8")
    report = await sync.sync_from_file("5")
    assert "#999 no existe" in report.error


async def test_watcher_applies_atomic_rename_edits_without_looping(store):
    a, _, _ = await seed(store)
    data_dir = store.db_path.parent
    sync = MarkdownSync(data_dir, store, debounce_ms=100)
    await sync.write("5")
    await sync.start()
    try:
        path = ChatPaths(data_dir, "5").memory_md
        atomic_save(path, path.read_text(encoding="utf-8").replace(
            "## Preferencias\n", "## Preferencias\n\n- Le gusta caminar\n"))

        async def learned():
            return any(m.content == "Le gusta caminar" for m in await store.list("5"))

        await eventually(learned)
        await eventually(lambda: "Le gusta caminar" in path.read_text(encoding="utf-8")
                         and "[#" in path.read_text(encoding="utf-8").split("caminar")[0]
                         .splitlines()[-1])
        # our own rewrite is seen by the watcher and ignored
        await eventually(lambda: sync.ignored_own_writes >= 1)
        assert sync.applied_edits == 1
        # a second edit by a plain in-place write is also picked up
        path.write_text(path.read_text(encoding="utf-8").replace("Vive en Lima", "Vive en Quito"),
                        encoding="utf-8")

        async def moved():
            return any(m.content == "Vive en Quito" for m in await store.list("5"))

        await eventually(moved)
        assert (await store.get("5", a.id)).content == "Vive en Quito"
    finally:
        await sync.stop()


async def test_a_newer_edit_is_never_overwritten_by_the_rewrite(store):
    """If the person saves again while an edit is being applied, the rewrite is skipped."""
    await seed(store)
    data_dir = store.db_path.parent
    sync = MarkdownSync(data_dir, store)
    await sync.write("5")
    path = ChatPaths(data_dir, "5").memory_md
    first = path.read_text(encoding="utf-8").replace("Vive en Lima", "Vive en Tacna")
    path.write_text(first, encoding="utf-8")
    newer = first + "\n- Le gusta el mar\n"
    real_apply = sync._apply

    async def apply_then_person_saves_again(chat_id, data, state):
        report = await real_apply(chat_id, data, state)
        path.write_text(newer, encoding="utf-8")       # the editor saves once more
        return report

    sync._apply = apply_then_person_saves_again
    await sync.sync_from_file("5")
    assert path.read_text(encoding="utf-8") == newer
    sync._apply = real_apply
    report = await sync.sync_from_file("5")
    assert report.added == 1
    assert {"Vive en Tacna", "Le gusta el mar"} <= {m.content for m in await store.list("5")}


async def test_watcher_picks_up_a_chat_whose_memory_dir_appears_later(store):
    """A person creates MEMORY.md for a chat Rumi never wrote one for (rescan + catch-up)."""
    data_dir = store.db_path.parent
    sync = MarkdownSync(data_dir, store, debounce_ms=100, rescan_ms=200)
    await sync.start()
    try:
        path = ChatPaths(data_dir, "77").memory_md
        path.parent.mkdir(parents=True)
        atomic_save(path, "## Hechos\n\n- **mascota**: Tiene una iguana\n")

        async def learned():
            return [m.content for m in await store.list("77")] == ["Tiene una iguana"]

        await eventually(learned)
        await eventually(lambda: "[#" in path.read_text(encoding="utf-8"))
    finally:
        await sync.stop()
