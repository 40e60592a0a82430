"""Session files: snapshot + journal write little per message and never lose a saved state.

Issue 6 caps SD-card wear at 20 KB per message; rewriting the whole `session.json` per message
broke that as sessions grew. These tests drive the real `SessionManager` and files: a reload
always equals the last save (items added, patched, unset, removed, reordered; metadata), one
more message appends a small line instead of rewriting the snapshot, the journal is folded back
when it outgrows the snapshot, and torn, damaged or stale journal lines — what a crash leaves —
are handled. A SIGKILL test runs the saves in a real child process.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from rumi.config import SessionSettings
from rumi.sessions import persist
from rumi.sessions.events import SessionEvent
from rumi.sessions.manager import SessionManager
from rumi.sessions.state import ContextItem, SessionState
from tests.conftest import REPO

CHAT = "77"


def manager(data_dir: Path) -> SessionManager:
    return SessionManager(data_dir, SessionSettings())


def files(data_dir: Path) -> tuple[Path, Path]:
    folder = data_dir / "chats" / CHAT
    return folder / "session.json", folder / persist.JOURNAL_NAME


def add_message(session: SessionState, text: str, role: str = "user") -> ContextItem:
    item = ContextItem(id=session.allocate_id(), role=role, content=text)  # type: ignore[arg-type]
    session.items.append(item)
    return item


async def turn(mgr: SessionManager, *texts: str) -> SessionState:
    """One handled message: lock, add items, release (which saves)."""
    session = await mgr.acquire(CHAT)
    assert session is not None
    for text in texts:
        add_message(session, text)
    await mgr.release(CHAT)
    return session


async def reloaded(data_dir: Path) -> SessionState:
    return await manager(data_dir).get(CHAT)


async def grown(data_dir: Path, messages: int = 30) -> tuple[SessionManager, SessionState]:
    """A session well past `SMALL_SNAPSHOT`, folded into a fresh snapshot (as a save does once
    the journal outgrows it) and reloaded, so the next saves go to an empty journal."""
    mgr = manager(data_dir)
    for n in range(messages):
        session = await turn(mgr, f"mensaje {n} " + "palabra " * 20, f"respuesta {n} " * 10)
    persist.write_snapshot(files(data_dir)[0], *persist.capture(session))
    mgr = manager(data_dir)
    session = await mgr.get(CHAT)
    assert not files(data_dir)[1].exists()
    return mgr, session


async def test_one_more_message_appends_a_small_line(data_dir: Path) -> None:
    mgr, session = await grown(data_dir)
    snapshot, journal = files(data_dir)
    size, before = snapshot.stat().st_size, snapshot.stat().st_mtime_ns
    assert size > persist.SMALL_SNAPSHOT
    await turn(mgr, "¿y mañana?", "Mañana toca el dentista a las diez.")
    assert snapshot.stat().st_mtime_ns == before  # not rewritten
    line = journal.read_bytes()  # grown() left no journal: this turn's line is all of it
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert len(line) < 600 < size  # the two new items and last_active, not the session
    assert (await reloaded(data_dir)).to_dict() == session.to_dict()


async def test_every_kind_of_change_survives_a_reload(data_dir: Path) -> None:
    mgr, session = await grown(data_dir)
    session = await mgr.acquire(CHAT)
    assert session is not None
    first, second, third = session.items[:3]
    first.pinned = True
    second.token_count = 42
    third.tool_calls = [{"id": "c1", "type": "function",
                         "function": {"name": "wait", "arguments": "{}"}}]
    del session.items[3:6]
    summary = ContextItem(id=session.allocate_id(), role="assistant", content="Resumen: …",
                          kind="summary", covers=[4, 5, 6])
    session.items.insert(3, summary)  # out of append order: needs the order list
    session.metadata["context"] = {"calibration": {"m": {"factor": 1.2, "samples": 3}}}
    session.metadata["gone"] = 1
    await mgr.release(CHAT)
    session = await mgr.acquire(CHAT)
    assert session is not None
    session.items[0].pinned = False  # back to the default: an unset, not a value
    del session.metadata["gone"]
    session.metadata["context"]["calibration"]["m"]["samples"] = 4
    await mgr.release(CHAT)
    _, journal = files(data_dir)
    assert journal.exists()
    again = await reloaded(data_dir)
    assert again.to_dict() == session.to_dict()
    assert [i.id for i in again.items][:5] == [1, 2, 3, summary.id, 7]


async def test_journal_is_folded_when_it_outgrows_the_snapshot(data_dir: Path) -> None:
    mgr, session = await grown(data_dir, messages=12)
    snapshot, journal = files(data_dir)
    token = json.loads(snapshot.read_text())["journal"]
    for n in range(40):
        session = await turn(mgr, f"otra cosa {n} " * 6)
        assert not journal.exists() or journal.stat().st_size <= snapshot.stat().st_size
    assert json.loads(snapshot.read_text())["journal"] != token  # rewritten at least once
    assert (await reloaded(data_dir)).to_dict() == session.to_dict()


async def test_torn_last_line_keeps_the_previous_save(data_dir: Path,
                                                      caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="rumi.sessions.persist")
    mgr, _ = await grown(data_dir)
    session = await turn(mgr, "lo último que se guardó")
    expected = session.to_dict()
    snapshot, journal = files(data_dir)
    token = json.loads(snapshot.read_text())["journal"]
    with journal.open("ab") as fh:  # what a crash in the middle of an append leaves
        fh.write(b'{"j":"' + token.encode() + b'","put":[{"id":999,"ro')
    mgr2 = manager(data_dir)
    again = await mgr2.get(CHAT)
    assert again.to_dict() == expected and "torn" in caplog.text
    await turn(mgr2, "sigue funcionando")
    assert not journal.exists()  # a whole snapshot, not a line after the torn one
    assert (await reloaded(data_dir)).items[-1].content == "sigue funcionando"


async def test_a_last_line_missing_only_its_newline_is_not_appended_to(data_dir: Path) -> None:
    """A crash can cut an append just before its newline: the line applies, but a line
    appended after it would join it and both would be lost."""
    mgr, _ = await grown(data_dir)
    await turn(mgr, "casi completa")
    _, journal = files(data_dir)
    journal.write_bytes(journal.read_bytes().rstrip(b"\n"))
    mgr2 = manager(data_dir)
    assert (await mgr2.get(CHAT)).items[-1].content == "casi completa"
    session = await turn(mgr2, "después")
    assert (await reloaded(data_dir)).to_dict() == session.to_dict()


async def test_damaged_middle_line_stops_the_replay_there(data_dir: Path,
                                                          caplog: pytest.LogCaptureFixture
                                                          ) -> None:
    mgr, _ = await grown(data_dir)
    kept = (await turn(mgr, "primero")).to_dict()
    await turn(mgr, "segundo")
    _, journal = files(data_dir)
    lines = journal.read_bytes().splitlines(keepends=True)
    journal.write_bytes(b"".join(lines[:-1]) + b"{garbage}\n" + lines[-1])
    assert (await reloaded(data_dir)).to_dict() == kept
    assert "damaged" in caplog.text


async def test_stale_journal_of_an_older_snapshot_is_ignored(data_dir: Path) -> None:
    """A crash between writing a new snapshot and deleting the old journal."""
    mgr, _ = await grown(data_dir)
    await turn(mgr, "en el diario")
    snapshot, journal = files(data_dir)
    stale = journal.read_bytes()
    session = await mgr.get(CHAT)
    expected = session.to_dict()
    persist.write_snapshot(snapshot, *persist.capture(session))
    journal.write_bytes(stale + stale)  # replaying it twice would duplicate nothing anyway
    assert (await reloaded(data_dir)).to_dict() == expected


async def test_a_session_json_from_an_older_rumi_still_loads(data_dir: Path) -> None:
    snapshot, journal = files(data_dir)
    old = SessionState(chat_id=CHAT, next_id=3,
                       items=[ContextItem(id=1, role="user", content="hola"),
                              ContextItem(id=2, role="assistant", content="¡hola!")])
    snapshot.parent.mkdir(parents=True)
    snapshot.write_text(json.dumps(old.to_dict(), indent=1), encoding="utf-8")
    mgr = manager(data_dir)
    session = await turn(mgr, "¿sigues ahí?")
    assert [i.content for i in session.items] == ["hola", "¡hola!", "¿sigues ahí?"]
    assert "journal" in json.loads(snapshot.read_text())  # replaced by the new format
    assert (await reloaded(data_dir)).to_dict() == session.to_dict()


async def test_a_failed_write_is_followed_by_a_whole_snapshot(
        data_dir: Path, caplog: pytest.LogCaptureFixture) -> None:
    mgr, _ = await grown(data_dir)
    _, journal = files(data_dir)
    journal.mkdir()  # appending now fails, as on a full disk or an I/O error
    await turn(mgr, "no cabe")
    assert "saving session of chat 77 failed" in caplog.text
    journal.rmdir()
    session = await turn(mgr, "ya cabe")
    assert not journal.exists()  # rewritten whole: no line after a failed one
    assert [i.content for i in (await reloaded(data_dir)).items][-2:] == ["no cabe", "ya cabe"]
    assert (await reloaded(data_dir)).to_dict() == session.to_dict()


async def test_ending_the_session_removes_both_files(data_dir: Path) -> None:
    mgr, _ = await grown(data_dir)
    await turn(mgr, "una más")
    snapshot, journal = files(data_dir)
    assert snapshot.exists() and journal.exists()
    assert await mgr.end(CHAT, "reset")
    assert not snapshot.exists() and not journal.exists()


CHILD = """
import asyncio, sys
from pathlib import Path
from rumi.config import SessionSettings
from rumi.sessions.manager import SessionManager
from rumi.sessions.state import ContextItem

async def main() -> None:
    mgr = SessionManager(Path(sys.argv[1]), SessionSettings())
    n = 0
    while True:
        session = await mgr.acquire("77")
        session.items.append(ContextItem(id=session.allocate_id(), role="user",
                                         content=f"mensaje {n} " + "x" * (n % 200)))
        await mgr.release("77")
        print(n, flush=True)  # acknowledged: release returned, so the save is durable
        n += 1

asyncio.run(main())
"""


@pytest.mark.parametrize("kill_after", [5, 40, 90])
async def test_sigkill_never_loses_an_acknowledged_save(data_dir: Path, kill_after: int) -> None:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", CHILD, str(data_dir), stdout=asyncio.subprocess.PIPE,
        cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.stdout is not None
    acknowledged = -1
    try:
        while acknowledged < kill_after:
            line = await asyncio.wait_for(proc.stdout.readline(), 30)
            assert line, "the child died on its own"
            acknowledged = int(line)
    finally:
        proc.send_signal(signal.SIGKILL)
        await proc.wait()
    session = await reloaded(data_dir)
    contents = [i.content for i in session.items]
    assert len(contents) >= acknowledged + 1  # maybe one more, never one fewer
    assert contents == [f"mensaje {n} " + "x" * (n % 200) for n in range(len(contents))]


def stat_of(path: Path) -> tuple[int, int, bytes]:
    info = path.stat()
    return info.st_ino, info.st_mtime_ns, path.read_bytes()


async def test_loading_a_journal_writes_nothing(data_dir: Path) -> None:
    """Loading is a read: an expired session about to be ended must not cost a snapshot."""
    mgr, _ = await grown(data_dir)
    session = await turn(mgr, "en el diario")
    snapshot, journal = files(data_dir)
    before = stat_of(snapshot), stat_of(journal), sorted(snapshot.parent.iterdir())
    again = await reloaded(data_dir)  # a crash right here loses nothing: the files are intact
    assert (stat_of(snapshot), stat_of(journal), sorted(snapshot.parent.iterdir())) == before
    assert again.to_dict() == session.to_dict()


async def test_an_expired_session_with_a_journal_is_ended_without_a_snapshot(
        data_dir: Path) -> None:
    mgr, _ = await grown(data_dir)
    session = await mgr.acquire(CHAT)
    assert session is not None
    add_message(session, "la última")
    await mgr.save(session)
    session.last_active = "2020-01-01T00:00:00Z"
    await mgr.save(session)  # both go to the journal: the expiry is only in a journal line
    await mgr.release(CHAT, save=False)
    snapshot, journal = files(data_dir)
    assert journal.exists()
    written = stat_of(snapshot)
    later = SessionManager(data_dir, SessionSettings(ttl_minutes=1))
    seen: list[bool] = []

    async def at_end(event: SessionEvent) -> None:
        seen.append(stat_of(snapshot) == written)

    later.events.subscribe("ended", at_end)
    await later.get(CHAT)
    assert seen == [True]  # the session being ended was never rewritten first


async def test_load_append_save_load_keeps_every_message(data_dir: Path) -> None:
    mgr, _ = await grown(data_dir)
    await turn(mgr, "uno")
    await turn(mgr, "dos")
    snapshot, journal = files(data_dir)
    written = stat_of(snapshot)
    mgr2 = manager(data_dir)
    await mgr2.get(CHAT)
    session = await turn(mgr2, "tres")
    session = await turn(mgr2, "cuatro")
    assert stat_of(snapshot) == written  # a clean journal is simply appended to
    assert journal.read_bytes().count(b"\n") == 4
    again = await reloaded(data_dir)
    assert again.to_dict() == session.to_dict()
    assert [i.content for i in again.items][-4:] == ["uno", "dos", "tres", "cuatro"]


class HeldExecutor(ThreadPoolExecutor):
    """The loop's default executor (asyncio's own injection point). After `hold()` the next
    job starts — so cancelling its awaiter can no longer stop it — then waits for `go`."""

    def __init__(self) -> None:
        super().__init__(max_workers=2)
        self.holding = False
        self.started, self.go, self.finished = (threading.Event() for _ in range(3))

    def hold(self) -> None:
        self.holding = True

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        if not self.holding:
            return super().submit(fn, *args, **kwargs)
        self.holding = False
        return super().submit(self._held, fn, *args, **kwargs)

    def _held(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        self.started.set()
        try:
            assert self.go.wait(10), "never released"
            return fn(*args, **kwargs)
        finally:
            self.finished.set()


async def until(event: threading.Event) -> None:
    for _ in range(1000):
        if event.is_set():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("timed out")


@pytest.mark.parametrize("pasted_words", [100, 3000], ids=["appended", "new-snapshot"])
async def test_a_save_cancelled_mid_write_still_updates_the_image(data_dir: Path,
                                                                   pasted_words: int) -> None:
    """The worker thread outlives a cancelled `save_all`; what it wrote must reach the chat's
    image. Else the next save diffs against files that are gone: after an appended line a
    removed item comes back; after a new snapshot the old token makes the load ignore the line.
    """
    mgr, session = await grown(data_dir)
    executor = HeldExecutor()
    asyncio.get_running_loop().set_default_executor(executor)
    try:
        pasted = add_message(session, "pegado " * pasted_words)
        executor.hold()
        saving = asyncio.create_task(mgr.save_all())
        await until(executor.started)
        saving.cancel()
        with pytest.raises(asyncio.CancelledError):
            await saving
    finally:
        executor.go.set()
    await until(executor.finished)
    session = await mgr.acquire(CHAT)
    assert session is not None
    session.items.remove(pasted)  # compacted away: what is left is a small journal line
    add_message(session, "resumen del documento")
    await mgr.release(CHAT)
    snapshot, _ = files(data_dir)
    assert (snapshot.stat().st_size > 20000) == (pasted_words > 1000)  # the path meant
    again = await reloaded(data_dir)
    assert again.to_dict() == session.to_dict()
