"""MEMORY.md ⇄ store: render, edits (also by atomic rename) applied, no loop, malformed kept."""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial

import pytest

from rumi import messages as msg
from rumi.memory.files.markdown_format import MalformedMemoryFile, parse, render
from rumi.memory.files.markdown_sync import STATE_NAME, MarkdownSync
from rumi.memory.store.models import MemorySource, MemoryStatus, MemoryType, NewMemory
from rumi.paths import ChatPaths
from tests.memory.backends import data_dir_of


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
    store_dir = data_dir_of(store)
    sync = MarkdownSync(store_dir, store)
    await sync.write("5")
    text = ChatPaths(store_dir, "5").memory_md.read_text(encoding="utf-8")
    assert text.index("## Hechos") < text.index("## Preferencias") < text.index("## Decisiones")
    assert f"- [#{a.id}] **ciudad**: Vive en Lima" in text
    assert f"- [#{b.id}] Le gusta el café" in text
    assert "equivoqué" not in text and "cine" not in text
    again = render(await store.list("5", limit=100), version=1)
    assert again == text  # stable
    assert [e.memory_id for e in parse(text)] == [a.id, b.id, c.id]


async def test_edit_updates_store_and_rewrite_is_not_a_loop(store):
    a, b, c = await seed(store)
    data_dir = data_dir_of(store)
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
    assert await store.get("5", c.id) is None  # erased
    rewritten = path.read_text(encoding="utf-8")
    assert f"[#{active['Usa Vim'].id}] **editor**: Usa Vim" in rewritten
    # the file Rumi just wrote is recognised as its own: nothing is applied again
    assert (await sync.sync_from_file("5")).ignored_own_write
    assert sync.applied_edits == 1


async def test_a_malformed_edit_is_kept_aside_and_the_file_rewritten(store):
    """Never silent, never wedged: the person's text is kept, the chat is told why and where,
    and MEMORY.md goes on showing (and syncing) the memory."""
    await seed(store)
    data_dir = data_dir_of(store)
    notices = []

    async def notice(chat_id, text):
        notices.append((chat_id, text))

    sync = MarkdownSync(data_dir, store, on_notice=notice)
    await sync.write("5")
    path = ChatPaths(data_dir, "5").memory_md
    broken = path.read_text(encoding="utf-8") + "\n## Cosas raras\n- algo\n"
    atomic_save(path, broken)
    report = await sync.sync_from_file("5")
    assert "sección desconocida" in report.error and report.rejected
    kept = path.parent / report.rejected
    assert report.rejected.startswith("MEMORY.md.rejected-")
    assert kept.read_text(encoding="utf-8") == broken
    line = broken.splitlines().index("## Cosas raras") + 1
    assert notices and notices[0][0] == "5"
    assert f"línea {line}" in notices[0][1] and report.rejected in notices[0][1]
    assert "Cosas raras" not in path.read_text(encoding="utf-8")
    status = await sync.status_lines("5")
    assert any(report.rejected in s and "sección desconocida" in s for s in status)
    # syncing goes on: Rumi's writes reach the file
    await store.save("5", NewMemory("Tiene una bicicleta"))
    assert await sync.write("5") is True
    assert "Tiene una bicicleta" in path.read_text(encoding="utf-8")
    # the fixed edit (made on the copy the person had) applies and clears the state
    atomic_save(path, broken.replace("## Cosas raras\n", ""))
    report = await sync.sync_from_file("5")
    assert report.error is None and report.added == 1 and "5" not in sync.problems
    text = path.read_text(encoding="utf-8")
    assert "Tiene una bicicleta" in text and "- [#" in text and "algo" in text
    assert await sync.status_lines("5") == []


@pytest.mark.parametrize("memory_id", ["99999999999999999999", str(2**63)])
async def test_an_id_too_large_for_the_database_is_kept_aside_with_a_note(store, data_dir,
                                                                          memory_id):
    """A person types a huge id (or pastes one from elsewhere): the database cannot hold it, so
    the edit is kept aside like any other bad edit, the chat told which line, nothing lost."""
    await seed(store)
    before = sorted(m.content for m in await store.list("5", limit=50))
    notices = []

    async def notice(chat_id, text):
        notices.append((chat_id, text))

    sync = MarkdownSync(data_dir, store, on_notice=notice)
    await sync.write("5")
    path = ChatPaths(data_dir, "5").memory_md
    edited = path.read_text(encoding="utf-8").replace(
        "## Hechos\n", f"## Hechos\n- [#{memory_id}] Tiene un gato llamado Mishi\n", 1)
    assert memory_id in edited
    atomic_save(path, edited)
    report = await sync.sync_from_file("5")
    assert report.rejected and report.rejected.startswith("MEMORY.md.rejected-")
    assert (path.parent / report.rejected).read_text(encoding="utf-8") == edited   # kept
    line = edited.splitlines().index(f"- [#{memory_id}] Tiene un gato llamado Mishi") + 1
    assert notices and f"línea {line}" in notices[0][1] and report.rejected in notices[0][1]
    assert msg.MD_ID_TOO_LARGE.split("{")[0] in notices[0][1]
    assert "Vive en Lima" in path.read_text(encoding="utf-8")   # rewritten from the database
    assert sorted(m.content for m in await store.list("5", limit=50)) == before   # as it was
    # the fixed line (no id) is a new memory, as the note says
    atomic_save(path, edited.replace(f"[#{memory_id}] ", ""))
    report = await sync.sync_from_file("5")
    assert report.error is None and report.added == 1


async def test_a_rejected_edit_is_told_in_the_chat_language(store):
    """Found by the watcher with no message in hand: the chat's remembered language."""
    await seed(store)
    data_dir = data_dir_of(store)
    notices = []

    async def notice(chat_id, text):
        notices.append(text)

    sync = MarkdownSync(data_dir, store, on_notice=notice, language_of=lambda chat: "en")
    await sync.write("5")
    path = ChatPaths(data_dir, "5").memory_md
    atomic_save(path, path.read_text(encoding="utf-8") + "\n## Cosas raras\n- algo\n")
    with msg.use_language("es"):
        report = await sync.sync_from_file("5")
    assert "unknown section" in report.error
    assert notices and notices[0].startswith("⚠️ I could not apply your MEMORY.md edit")
    assert "line " in notices[0] and "línea" not in notices[0]


@pytest.mark.parametrize("text, reason", [
    ("## Hechos\nsolo texto\n", "no es un recuerdo"),
    ("- huérfano\n", "fuera de una sección"),
    ("## Hechos\n- [#3]   \n", "vacío"),
])
def test_parse_errors_name_the_line(text, reason):
    with pytest.raises(MalformedMemoryFile, match=reason):
        parse(text)


async def test_an_unknown_id_is_kept_as_a_new_memory(store):
    """A typed (or foreign) id is not a reason to lose the line: it becomes a new memory."""
    await seed(store)
    sync = MarkdownSync(data_dir_of(store), store)
    path = ChatPaths(data_dir_of(store), "5").memory_md
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("## Hechos\n- [#999] inventado\n", encoding="utf-8")
    report = await sync.sync_from_file("5")
    assert report.error is None and report.added == 1
    assert "inventado" in {m.content for m in await store.list("5", limit=50)}
    assert "[#999]" not in path.read_text(encoding="utf-8")


async def test_watcher_applies_atomic_rename_edits_without_looping(store):
    a, _, _ = await seed(store)
    data_dir = data_dir_of(store)
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
    data_dir = data_dir_of(store)
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


class SaveBeforeJob(ThreadPoolExecutor):
    """The loop's default executor, running `save` on the loop thread just before the n-th
    blocking job it is handed: a person saving at exactly that await point of a sync."""

    def __init__(self) -> None:
        super().__init__(max_workers=2)
        self.arm(-1, lambda: None)

    def arm(self, n: int, save: Callable[[], None]) -> None:
        self.n, self.save, self.jobs = n, save, 0

    def submit(self, fn, /, *args, **kwargs):
        if self.jobs == self.n:
            self.save()
        self.jobs += 1
        return super().submit(fn, *args, **kwargs)


@pytest.mark.parametrize("entry", ["sync_from_file", "write"])
async def test_a_save_at_any_await_point_of_a_sync_is_never_overwritten(store, entry):
    """The person saves again while Rumi applies their previous edit, at every await point in
    turn. Rumi's rewrite used to check the file one await before replacing it, so a save
    landing in between was overwritten and lost for good (the e2e test's malformed edit)."""
    data_dir = data_dir_of(store)
    sync = MarkdownSync(data_dir, store)
    loop = asyncio.get_running_loop()
    executor = SaveBeforeJob()
    loop.set_default_executor(executor)
    try:
        for n in range(100):
            chat = f"{n + 1}"
            await store.save(chat, NewMemory("Vive en Lima", key="ciudad"))
            await sync.write(chat)
            path = ChatPaths(data_dir, chat).memory_md
            first = path.read_text(encoding="utf-8").replace("Vive en Lima", "Vive en Tacna")
            atomic_save(path, first)
            executor.arm(n, partial(atomic_save, path, first + "\n- Le gusta el mar\n"))
            await getattr(sync, entry)(chat)
            if executor.jobs <= n:
                break          # every await point of the sync has been tried
            executor.arm(-1, lambda: None)
            await sync.sync_from_file(chat)      # what the watcher does for the newer save
            contents = {m.content for m in await store.list(chat)}
            assert {"Vive en Tacna", "Le gusta el mar"} <= contents, f"save before job {n}"
            assert "Le gusta el mar" in path.read_text(encoding="utf-8")
        assert n >= 4
    finally:
        loop.set_default_executor(ThreadPoolExecutor())
        executor.shutdown()


async def test_an_edit_saved_while_the_watcher_adds_a_new_chat_is_applied(store):
    """Rumi's first MEMORY.md of a chat restarts the watcher to add that memory/ directory; an
    edit saved before the new watch is live is applied by the catch-up that follows the
    restart, long before the 30 s rescan."""
    data_dir = data_dir_of(store)
    await store.save("8", NewMemory("Vive en Lima", key="ciudad"))
    sync = MarkdownSync(data_dir, store, debounce_ms=100)
    await sync.start()
    try:
        await sync.write("8")
        path = ChatPaths(data_dir, "8").memory_md
        atomic_save(path, path.read_text(encoding="utf-8").replace("Lima", "Cusco"))

        async def moved():
            return [m.content for m in await store.list("8")] == ["Vive en Cusco"]

        await eventually(moved, timeout=10)
    finally:
        await sync.stop()


@pytest.mark.parametrize("old_format", ["ids only", "ids and history"])
async def test_a_state_file_with_ids_is_still_read(store, old_format):
    """State files before 9b71766 held only `ids`; later ones repeated it beside `history`."""
    _, b, _ = await seed(store)
    data_dir = data_dir_of(store)
    sync = MarkdownSync(data_dir, store)
    await sync.write("5")
    state_path = ChatPaths(data_dir, "5").memory_dir / STATE_NAME
    state = json.loads(state_path.read_text(encoding="utf-8"))
    ids = sorted(int(i) for i in state["history"][-1]["lines"])
    old = {"sha256": state["sha256"], "ids": ids}
    if old_format == "ids and history":
        old["history"] = [ids]
    state_path.write_text(json.dumps(old), encoding="utf-8")
    path = ChatPaths(data_dir, "5").memory_md
    atomic_save(path, path.read_text(encoding="utf-8").replace(
        f"- [#{b.id}] Le gusta el café\n", ""))
    report = await sync.sync_from_file("5")
    assert report.removed == 1
    assert await store.get("5", b.id) is None  # erased
    new = json.loads(state_path.read_text(encoding="utf-8"))
    assert "ids" not in new
    assert sorted(int(i) for i in new["history"][-1]["lines"]) == [i for i in ids if i != b.id]


async def test_watcher_picks_up_a_chat_whose_memory_dir_appears_later(store):
    """A person creates MEMORY.md for a chat Rumi never wrote one for (rescan + catch-up)."""
    data_dir = data_dir_of(store)
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


async def _synced(store, notices=None):
    async def notice(chat_id, text):
        if notices is not None:
            notices.append((chat_id, text))

    data_dir = data_dir_of(store)
    sync = MarkdownSync(data_dir, store, on_notice=notice)
    await sync.write("5")
    return sync, ChatPaths(data_dir, "5").memory_md


async def test_an_edit_too_long_for_the_store_is_reported_and_keeps_the_memory(store):
    """It used to be forgotten silently (any update error was taken for a merge)."""
    a, _, _ = await seed(store)
    notices = []
    sync, path = await _synced(store, notices)
    edited = path.read_text(encoding="utf-8").replace("Vive en Lima", "Vive " + "x" * 25_000)
    atomic_save(path, edited)
    report = await sync.sync_from_file("5")
    line = edited.splitlines().index(next(ln for ln in edited.splitlines()
                                          if ln.startswith(f"- [#{a.id}]"))) + 1
    assert report.error.startswith(f"línea {line}:") and "demasiado largo" in report.error
    assert notices and f"línea {line}" in notices[0][1]
    memory = await store.get("5", a.id)
    assert memory.status == MemoryStatus.ACTIVE and memory.content == "Vive en Lima"
    assert (path.parent / report.rejected).read_text(encoding="utf-8") == edited   # kept
    assert "Vive en Lima" in path.read_text(encoding="utf-8")


async def test_a_bad_new_line_blocks_the_whole_edit_before_anything_is_applied(store):
    await seed(store)
    notices = []
    sync, path = await _synced(store, notices)
    edited = path.read_text(encoding="utf-8").replace("Vive en Lima", "Vive en Arequipa")
    edited = edited.replace("## Decisiones\n", "## Decisiones\n\n- Nueva " + "y" * 25_000 + "\n")
    atomic_save(path, edited)
    report = await sync.sync_from_file("5")
    assert "demasiado largo" in report.error and notices
    contents = {m.content for m in await store.list("5", limit=50)}
    assert "Vive en Lima" in contents and "Vive en Arequipa" not in contents
    # fixing the bad line applies the rest
    atomic_save(path, edited.replace("- Nueva " + "y" * 25_000, "- Nueva decisión"))
    report = await sync.sync_from_file("5")
    assert report.error is None and (report.added, report.changed) == (1, 1)


async def test_an_edit_equal_to_another_memory_merges_into_it(store):
    """Only a real duplicate (same key and text as another memory) removes the edited one."""
    a, b, _ = await seed(store)
    sync, path = await _synced(store)
    atomic_save(path, path.read_text(encoding="utf-8").replace(
        "**ciudad**: Vive en Lima", "Le gusta el café"))
    report = await sync.sync_from_file("5")
    assert report.error is None and report.changed == 1
    assert await store.get("5", a.id) is None  # erased
    assert (await store.get("5", b.id)).status == MemoryStatus.ACTIVE
    assert path.read_text(encoding="utf-8").count("Le gusta el café") == 1


async def test_a_stale_buffer_after_supersede_and_forget_does_not_wedge_the_sync(store):
    """An editor held the old file while the bot replaced one memory and forgot another."""
    a, b, c = await seed(store)
    notices = []
    sync, path = await _synced(store, notices)
    stale = path.read_text(encoding="utf-8")
    newer = await store.supersede("5", a.id, NewMemory("Vive en Cusco", key="ciudad"))
    await store.forget("5", memory_id=b.id)
    await sync.write("5")
    # the person saves the old buffer: a's line unchanged, b's line edited, a new line added
    edited = stale.replace("Le gusta el café", "Le gusta el café con leche").replace(
        "## Decisiones\n", "## Decisiones\n\n- Irá a Cusco en julio\n")
    atomic_save(path, edited)
    report = await sync.sync_from_file("5")
    assert report.error is None and notices == []
    active = {m.content: m for m in await store.list("5", limit=50)}
    assert "Vive en Cusco" in active and "Vive en Lima" not in active   # stale line dropped
    assert active["Le gusta el café con leche"].source == MemorySource.EXPLICIT
    assert "Irá a Cusco en julio" in active and "Usará Postgres" in active
    assert await store.get("5", b.id) is None  # erased
    text = path.read_text(encoding="utf-8")
    assert f"[#{newer.id}] **ciudad**: Vive en Cusco" in text and f"[#{a.id}]" not in text
    assert f"[#{c.id}]" in text


def test_cli_forget_purge_and_import_rewrite_memory_md(make_settings, tmp_path, capsys):
    """`rumi memory forget|purge|import` leave MEMORY.md showing the store, not stale ids."""
    from datetime import UTC, datetime, timedelta

    from rumi.cli import main
    from rumi.memory.factory import open_memory_store

    settings = make_settings("[memory]\nembeddings_enabled = false\n")
    config = tmp_path / "cli.toml"
    config.write_text(f'data_dir = "{settings.data_dir}"\n[memory]\n'
                      "embeddings_enabled = false\n", encoding="utf-8")

    async def prepare():
        st = await open_memory_store(settings)
        try:
            keep = (await st.save("6", NewMemory("Tiene una tortuga", key="mascota"))).memory
            gone = (await st.save("6", NewMemory("Juega al ajedrez"))).memory
            old = (await st.save("6", NewMemory(
                "Está de viaje", expires_at=datetime.now(UTC) - timedelta(days=1)))).memory
            await MarkdownSync(settings.data_dir, st).write("6")
            return keep, gone, old
        finally:
            await st.close()

    keep, gone, old = asyncio.run(prepare())
    path = ChatPaths(settings.data_dir, "6").memory_md
    assert f"[#{gone.id}]" in path.read_text(encoding="utf-8")
    assert main(["memory", "forget", "--chat", "6", "--id", str(gone.id), "-c", str(config)]) == 0
    text = path.read_text(encoding="utf-8")
    assert f"[#{gone.id}]" not in text and f"[#{keep.id}]" in text
    assert f"[#{old.id}]" in text
    assert main(["memory", "purge", "-c", str(config)]) == 0
    assert f"[#{old.id}]" not in path.read_text(encoding="utf-8")
    dump = tmp_path / "dump.jsonl"
    dump.write_text('{"content": "Habla quechua", "type": "fact"}\n', encoding="utf-8")
    assert main(["memory", "import", "--chat", "6", str(dump), "-c", str(config)]) == 0
    assert "Habla quechua" in path.read_text(encoding="utf-8")
    capsys.readouterr()


async def test_fifo_in_place_of_memory_md_is_reported_not_waited_on(store):
    """A FIFO there used to hang /remember forever (and Ctrl-C with it)."""
    await seed(store)
    data_dir = data_dir_of(store)
    notices = []

    async def notice(chat_id, text):
        notices.append((chat_id, text))

    sync = MarkdownSync(data_dir, store, on_notice=notice)
    path = ChatPaths(data_dir, "5").memory_md
    path.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(path)
    assert await asyncio.wait_for(sync.write("5"), 10) is False
    report = await asyncio.wait_for(sync.sync_from_file("5"), 10)
    assert "FIFO" in report.error
    assert notices and "FIFO" in notices[0][1]
    assert (await store.list("5"))  # the memories themselves are intact
    path.unlink()
    assert await sync.write("5") is True  # once it is a file again, sync resumes
    assert "Vive en Lima" in path.read_text(encoding="utf-8")
