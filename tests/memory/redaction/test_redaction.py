"""Redaction: a secret said in conversation, learned, summarised, logged, snapshotted and
exported is gone from every file under the data dir after `/forget` + redaction, from later
prompts, searches and exports, and nothing learns it again; the tape keeps every id."""

from __future__ import annotations

import io
import json
import tarfile
import uuid
from pathlib import Path

from rumi.base.replies import Attachment
from rumi.memory.learning.consolidation import Consolidator
from rumi.memory.redaction.record import INTENT_NAME
from rumi.memory.redaction.redactor import Redactor
from rumi.memory.store.models import NewMemory
from rumi.paths import ChatPaths
from tests.memory.backends import sqlite_only
from tests.memory.rig import extraction_json

CHAT = "1502"
TOMB = "[borrado a petición del usuario]"


def _occurrences(root: Path, secret: bytes) -> dict[str, int]:
    found: dict[str, int] = {}
    for path in sorted(root.rglob("*")):
        if path.is_file():
            n = path.read_bytes().count(secret)
            if n:
                found[str(path.relative_to(root))] = n
        if secret.decode() in path.name:
            found[f"name:{path.relative_to(root)}"] = 1
    return found


def _in_archive(data: bytes, secret: bytes) -> dict[str, int]:
    found: dict[str, int] = {}
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        for member in tar.getmembers():
            extracted = tar.extractfile(member)
            n = extracted.read().count(secret) if extracted is not None else 0
            if n or secret.decode() in member.name:
                found[member.name] = n
    return found


def _tape_ids(path: Path) -> list[int]:
    ids = []
    for line in path.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if "event" not in record:
            ids.append(record["id"])
    return ids


def _is_extraction(body: dict) -> bool:
    return body.get("response_format") == {"type": "json_object"} and \
        "long-term memories" in body["messages"][0]["content"]


class Script:
    """The fake Groq's answers: a model that repeats the secret wherever it can."""

    def __init__(self, secret: str) -> None:
        self.secret = secret
        self.fail_extraction = False

    def __call__(self, body: dict) -> dict:
        seen = self.secret in json.dumps(body, ensure_ascii=False)
        first = body["messages"][0].get("content") or ""
        if _is_extraction(body):
            if self.fail_extraction:
                return {"role": "assistant", "content": "no json"}
            memories = [{"type": "fact", "content": f"Su pasaporte es {self.secret}",
                         "key": "pasaporte", "importance": 0.8}] if seen else []
            events = [f"Dio su pasaporte {self.secret}"] if seen else []
            return {"role": "assistant", "content": extraction_json(memories, events)}
        if "2-5 word title" in first:
            return {"role": "assistant", "content": f"pasaporte {self.secret}"}
        if first.startswith("Eres el compactador"):
            text = f"- Dio su pasaporte {self.secret}" if seen else "- Charla del proyecto"
            return {"role": "assistant", "content": text}
        return {"role": "assistant", "content": f"Anotado: {self.secret}." if seen else "Vale."}


async def _checkpoint(store) -> None:
    await store.connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")


@sqlite_only  # reads rumi.db's bytes on disk
async def test_forget_and_redaction_leave_no_copy_anywhere(rig, fake_groq):
    secret = "zq" + uuid.uuid4().hex[:12]
    raw = secret.encode()
    data_dir = rig.settings.data_dir
    paths = ChatPaths(data_dir, CHAT)
    script = Script(secret)
    fake_groq.responder = script

    # said, answered, learned and summarised (compaction), logged (the event)
    await rig.say(CHAT, "Hola")
    await rig.say(CHAT, f"Mi número de pasaporte es {secret}")
    for n in range(8):
        await rig.say(CHAT, f"Sigamos con el proyecto, paso {n}")
    session = await rig.sessions.acquire(CHAT, wait=True)
    try:
        assert (await rig.context.compact(session)).compacted
    finally:
        await rig.sessions.release(CHAT)
    assert [m.content for m in await rig.store.list(CHAT)] == [f"Su pasaporte es {secret}"]
    # snapshotted (its name from the model holds the secret), then said again in the new context
    clear = await rig.say(CHAT, "/clear")
    assert secret in clear.text
    await rig.say(CHAT, f"Repito: el pasaporte es {secret}")
    profile = paths.smma / "user_profile.md"          # the person noted it in their profile
    profile.write_text(profile.read_text(encoding="utf-8") + f"\n- Pasaporte: {secret}\n",
                       encoding="utf-8")
    # a deferred extraction keeps the transcript in pending_extraction.jsonl
    script.fail_extraction = True
    session = await rig.sessions.acquire(CHAT, wait=True)
    try:
        result = await rig.memory.lifecycle.learn(CHAT, session.items, reason="pressure",
                                                  session=session)
    finally:
        await rig.sessions.release(CHAT)
    script.fail_extraction = False
    assert result.pending
    before = await rig.say(CHAT, "/export")
    assert before.document is not None and _in_archive(before.document.data, raw)
    # searched: the conversation index in rumi.db now holds the said words too
    assert any(line.startswith("💬") for line in await rig.memory.commands.search(CHAT, secret))
    await _checkpoint(rig.store)
    planted = _occurrences(data_dir, raw)
    assert any(k.endswith("rumi.db") for k in planted), planted
    for where in (".smma/session_log.jsonl", "session.json", "memory/2026-06-01.md",
                  "memory/pending_extraction.jsonl", "memory/MEMORY.md"):
        assert any(k.endswith(where) for k in planted), (where, planted)
    assert any("snapshots" in k for k in planted)
    ids_before = _tape_ids(paths.tape)

    reply = await rig.say(CHAT, f"/forget {secret}")

    assert "¿Borro también las" in reply.text and "menciones en el historial" in reply.text
    assert secret not in reply.text
    assert reply.buttons is not None and ("🗑️ Sí, borrar", "/redact sí") in reply.buttons[0]
    done = await rig.say(CHAT, "/redact sí")
    assert done.text.startswith("✂️ Borrado: memoria #")
    assert "menciones en el historial" in done.text and secret not in done.text
    assert "líneas de tu perfil: 1" in done.text and "nombres de instantánea: 1" in done.text
    assert "- Pasaporte: [borrado a petición del usuario]" in profile.read_text(encoding="utf-8")
    first_request = len(fake_groq.requests)

    await _checkpoint(rig.store)
    assert _occurrences(data_dir, raw) == {}
    ids_after = _tape_ids(paths.tape)
    assert ids_after == ids_before                       # every id, in order
    redacted = [json.loads(line) for line in paths.tape.read_text().splitlines()
                if TOMB in line]
    assert redacted and all(r["content"] == TOMB for r in redacted if r.get("kind") is None
                            and "event" not in r)
    events = [json.loads(line) for line in paths.tape.read_text().splitlines()
              if '"event":"redaction"' in line]
    assert len(events) == 1 and events[0]["ids"]
    session = await rig.sessions.get(CHAT)
    original = await rig.context.original(session, events[0]["ids"][0])
    assert original is not None and original["content"] == TOMB

    # later prompts, searches, exports
    await rig.say(CHAT, "¿Cuál es mi pasaporte?")
    assert await rig.memory.commands.search(CHAT, secret) == []
    assert await rig.store.keyword_search(CHAT, secret, 10) == []
    after = await rig.say(CHAT, "/export")
    assert after.document is not None and _in_archive(after.document.data, raw) == {}
    # importing the export made before brings none of it back
    back = await rig.say(CHAT, "/import",
                         attachment=Attachment("old.tar.gz", before.document.data))
    assert back.text.startswith("📥") and "habías olvidado en este chat" in back.text
    assert _occurrences(data_dir, raw) == {}
    # nothing learns it again: the deferred extraction, nor a /reset
    await rig.scheduler.run_now("memory.retry_pending")
    reset = await rig.say(CHAT, "/reset")
    assert reset.text.startswith("🔄")
    assert all(secret not in m.content for m in await rig.store.list(CHAT, status=None))
    later = fake_groq.requests[first_request:]
    assert any(_is_extraction(b) for b in later)
    assert all(secret not in json.dumps(b, ensure_ascii=False) for b in later)
    # tombstoned messages are not even shown to extraction
    assert all(TOMB not in json.dumps(b, ensure_ascii=False) for b in later if _is_extraction(b))
    gap = await Consolidator(rig.store, None).integrate(
        CHAT, NewMemory(f"Su pasaporte es {TOMB}", key="pasaporte"))
    assert gap.action == "NOOP" and gap.reason == "redacted by the person"
    await _checkpoint(rig.store)
    assert _occurrences(data_dir, raw) == {}

    memory = await rig.say(CHAT, "/memory")
    assert "Borrados a petición tuya: 1 (" in memory.text
    status = await rig.say(CHAT, "/status")
    assert "Borrados a petición tuya: 1 (" in status.text


async def test_redact_asks_before_touching_many_messages_and_no_keeps_everything(rig, fake_groq):
    fake_groq.responder = lambda body: {"role": "assistant", "content": "Vale."}
    for n in range(5):
        await rig.say(CHAT, f"La clave del wifi es gato-azul-{n}")
    tape = ChatPaths(rig.settings.data_dir, CHAT).tape
    before = tape.read_bytes()

    ask = await rig.say(CHAT, "/redact gato-azul")

    assert "¿Lo borro?" in ask.text and "(mensajes: 5, conversación activa: 5)" in ask.text
    assert "gato-azul" not in ask.text and ask.buttons is not None
    no = await rig.say(CHAT, "/redact no")
    assert no.text == "De acuerdo, no borro nada de la conversación."
    assert tape.read_bytes() == before
    late = await rig.say(CHAT, "/redact sí")
    assert "caducó" in late.text and tape.read_bytes() == before

    await rig.say(CHAT, "/redact gato-azul")
    done = await rig.say(CHAT, "/redact s")
    assert "5 menciones en el historial (mensajes: 5," in done.text
    assert b"gato-azul" not in tape.read_bytes()


async def test_bad_redact_input_is_refused_and_changes_nothing(rig, fake_groq):
    fake_groq.responder = lambda body: {"role": "assistant", "content": "Vale."}
    await rig.say(CHAT, "Mi gato se llama Misu")
    tape = ChatPaths(rig.settings.data_dir, CHAT).tape
    before = tape.read_bytes()
    short = await rig.say(CHAT, "/redact Mi")
    assert short.is_error and "demasiado corto" in short.text
    mark = await rig.say(CHAT, "/redact borrado a petición")
    assert mark.is_error and "marca de borrado" in mark.text
    nothing = await rig.say(CHAT, "/redact perro verde")
    assert nothing.text.startswith("No encontré ese texto")
    usage = await rig.say(CHAT, "/redact")
    assert "/redact <texto>" in usage.text
    assert tape.read_bytes() == before


async def test_a_redaction_cut_by_a_crash_is_finished_at_start(rig, fake_groq):
    """The intent is written first: a crash after one file leaves the intent, and the next
    start finishes every other file (and an imported tape) before anything else."""
    secret = "zq" + uuid.uuid4().hex[:12]
    fake_groq.responder = lambda body: {"role": "assistant", "content": "Vale."}
    await rig.say(CHAT, f"El código de la caja es {secret}")
    paths = ChatPaths(rig.settings.data_dir, CHAT)
    imported = paths.smma / "imported_session_log_20260101T000000.jsonl"
    imported.write_text(json.dumps({"id": 1, "timestamp": "2026-01-01T00:00:00Z",
                                    "role": "user", "content": f"antes: {secret}"}) + "\n",
                        encoding="utf-8")
    daily = paths.daily_dir / "2026-05-30.md"
    daily.parent.mkdir(parents=True, exist_ok=True)
    daily.write_text(f"# 2026-05-30\n\n- 09:00 Dio el código {secret}\n", encoding="utf-8")
    # the state a crash leaves: the intent on disk, nothing rewritten yet
    intent = {"token": "feedc0de", "texts": [secret], "ids": [1], "tombstone": TOMB,
              "at": "2026-06-01T10:00:00+00:00"}
    (paths.smma / INTENT_NAME).write_text(json.dumps(intent), encoding="utf-8")
    await rig.sessions.save_all()

    # a new start: a fresh redactor over the same files finishes it
    redactor = Redactor(rig.settings.data_dir, store=rig.store, lifecycle=rig.memory.lifecycle,
                        sessions=rig.sessions, context=rig.context)
    assert await redactor.resume() == 1

    assert _occurrences(rig.settings.data_dir, secret.encode()) == {}
    assert not (paths.smma / INTENT_NAME).exists()
    assert json.loads(imported.read_text())["content"] == TOMB
    assert daily.read_text(encoding="utf-8").endswith(f"- 09:00 {TOMB}\n")
    assert await redactor.count(CHAT) == (1, 1)
    assert await redactor.resume() == 0


async def test_terminal_confirms_a_redaction_with_s(make_settings, fake_groq, data_dir):
    """The whole app (build_app) in the terminal: the question is answered by typing «s»."""
    import io

    from rumi.app import build_app
    from rumi.channels.terminal import TerminalChannel

    settings = make_settings(f'[llm]\napi_key = "k"\nbase_url = "{fake_groq.base_url}"\n'
                             "[sandbox]\nenabled = false\n[memory]\nembeddings_enabled = false\n")
    app = await build_app(settings)
    await app.start()
    try:
        lines = "".join(f"El pin es 8841-{n}\n" for n in range(5))
        out = io.StringIO()
        await TerminalChannel(app.assistant, stdin=io.StringIO(
            lines + "/redact 8841\ns\n/memory\n"), stdout=out).run()
    finally:
        await app.stop()
    text = out.getvalue()
    assert "¿Lo borro?" in text and "(o responde s/n)" in text
    assert "✂️ Borrado: 5 menciones en el historial" in text
    assert "Borrados a petición tuya: 1 (5 mensajes)" in text
    tape = ChatPaths(data_dir, "terminal").tape.read_text(encoding="utf-8")
    assert "8841" not in tape and tape.count(TOMB) == 5


async def test_the_cost_benchmark_redacts_what_it_planted() -> None:
    """benchmarks/redaction_cost.py on a small chat: every planted copy is found and gone."""
    import argparse
    import sys

    from tests.conftest import REPO

    sys.path.insert(0, str(REPO / "benchmarks"))
    import redaction_cost as bench

    result = await bench.run(argparse.Namespace(messages=200, hits=3))
    assert result["mentions"] == 5 and result["messages_redacted"] == 3
    assert result["memories_erased"] == 1 and result["secret_left"] == 0


async def test_the_inbox_journal_drops_answered_text_once_nothing_is_in_flight(tmp_path):
    """Telegram's inbox journal keeps received updates until the next start; after a
    redaction it is compacted as soon as the chat's `/redact` itself is answered."""
    from rumi.channels.inbox import Inbox

    path = tmp_path / "inbox.jsonl"
    inbox = Inbox(path)
    assert await inbox.load() == []
    await inbox.received(1, 5, 10, {"message": {"text": "clave zq-99-secreto"}})
    await inbox.done(5, 10)
    await inbox.received(2, 5, 11, {"message": {"text": "/redact zq-99-secreto"}})
    await inbox.received(3, 6, 20, {"message": {"text": "otro chat"}})
    await inbox.compact_after(5)
    assert "zq-99-secreto" in path.read_text(encoding="utf-8")   # /redact still in flight
    await inbox.done(5, 11)
    text = path.read_text(encoding="utf-8")
    assert "zq-99-secreto" not in text and "otro chat" in text   # unanswered ones stay
    again = Inbox(path)
    assert [p.update_id for p in await again.load()] == [3]
    assert again.seen(1) and again.seen(2)                          # re-sent updates dropped
