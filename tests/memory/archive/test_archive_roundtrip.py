"""Export → import into a new chat reproduces memories and files; merges without duplicates;
a refused archive changes nothing. Also through the `rumi export/import` commands."""

from __future__ import annotations

import asyncio
import hashlib
import io
import re
import tarfile

from rumi.base.replies import Attachment
from rumi.cli import main
from rumi.memory.store.models import MemoryType, NewMemory
from rumi.paths import ChatPaths
from tests.memory.backends import sqlite_only
from tests.memory.rig import extraction_json


def tree(root) -> dict[str, str]:
    """sha256 of every file under a chat dir (what an import must reproduce)."""
    out = {}
    for path in sorted(root.rglob("*")):
        if path.is_file():
            out[str(path.relative_to(root))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def strip_ids(text: str) -> str:
    """MEMORY.md without the `[#id]` markers (ids are per database row, so per chat) and
    without its version comment (it counts that chat's writes)."""
    return re.sub(r"<!-- rumi:v\d+", "<!-- rumi:v", re.sub(r"\[#\d+\] ", "", text))


def comparable(memories):
    return sorted((m.type, m.content, m.key, round(m.importance, 3),
                   round(m.confidence, 3)) for m in memories)


async def populate(rig, fake_groq, chat_id: str) -> None:
    fake_groq.enqueue_text("¡Suena bien!")
    await rig.say(chat_id, "Estoy escribiendo una novela sobre los Andes")
    fake_groq.enqueue_text("novela andina")
    fake_groq.enqueue_text(extraction_json(
        [{"type": "fact", "content": "Escribe una novela sobre los Andes", "key": "proyecto"}],
        ["Empezó a planear la novela"]))
    await rig.say(chat_id, "/clear")
    await rig.say(chat_id, "/remember Prefiere escribir de noche")
    await rig.store.save(chat_id, NewMemory("Decidió publicar en 2027", type=MemoryType.DECISION))


async def test_export_import_round_trip_into_a_new_chat(rig, fake_groq):
    await populate(rig, fake_groq, "300")
    reply = await rig.say("300", "/export")
    assert reply.document is not None and reply.document.filename.endswith(".tar.gz")
    with tarfile.open(fileobj=io.BytesIO(reply.document.data), mode="r:gz") as tar:
        names = set(tar.getnames())
    assert {"manifest.json", "memories.jsonl", ".smma/session_log.jsonl", "memory/MEMORY.md",
            "memory/2026-06-01.md"} <= names
    assert any(n.startswith("memory/snapshots/2026-06-01-novela-andina") for n in names)

    reply = await rig.say("301", "/import", attachment=Attachment(
        reply.document.filename, reply.document.data))
    assert "📥 Importado: 3 recuerdos nuevos" in reply.text, reply.text
    assert comparable(await rig.store.list("301")) == comparable(await rig.store.list("300"))
    src, dst = ChatPaths(rig.settings.data_dir, "300"), ChatPaths(rig.settings.data_dir, "301")
    for sub in (".smma", "memory/snapshots"):
        want = {k: v for k, v in tree(src.root / sub).items() if not k.startswith(".")}
        got = {k: v for k, v in tree(dst.root / sub).items() if not k.startswith(".")}
        assert want == got, sub
    assert (src.daily_dir / "2026-06-01.md").read_bytes() == \
        (dst.daily_dir / "2026-06-01.md").read_bytes()
    md_src = src.memory_md.read_text(encoding="utf-8")
    md_dst = dst.memory_md.read_text(encoding="utf-8")
    assert strip_ids(md_src) == strip_ids(md_dst)
    assert not list(dst.root.glob(".import-*"))

    # importing the same archive again adds nothing
    before = tree(dst.root)
    data = (await rig.say("300", "/export")).document.data
    reply = await rig.say("301", "/import", attachment=Attachment("a.tar.gz", data))
    assert "0 recuerdos nuevos" in reply.text
    assert len(await rig.store.list("301")) == 3
    after = tree(dst.root)
    changed = {k for k in after if before.get(k) != after[k]}
    assert all(k.startswith(".smma/session_log") is False for k in changed)


async def test_import_into_existing_chat_merges_logs_and_keeps_own_files(rig, fake_groq):
    await populate(rig, fake_groq, "302")
    data = (await rig.say("302", "/export")).document.data
    await rig.memory.journal.append_events("303", ["Evento propio del chat 303"])
    await rig.say("303", "/remember Tiene una tortuga")
    reply = await rig.say("303", "/import", attachment=Attachment("a.tar.gz", data))
    assert "combinados" in reply.text
    log = (ChatPaths(rig.settings.data_dir, "303").daily_dir / "2026-06-01.md").read_text(
        encoding="utf-8")
    assert "Evento propio del chat 303" in log and "Empezó a planear la novela" in log
    assert log.count("# 2026-06-01") == 1
    contents = {m.content for m in await rig.store.list("303")}
    assert "Tiene una tortuga" in contents and "Prefiere escribir de noche" in contents


async def test_new_messages_after_import_continue_the_imported_ids(rig, fake_groq):
    """/import into a fresh chat writes the tape after the chat was opened: new messages
    must not reuse the imported ids, or their originals could no longer be recalled."""
    await populate(rig, fake_groq, "310")
    data = (await rig.say("310", "/export")).document.data
    source = await rig.context.runtime(await rig.sessions.get("310")).tape.records()
    imported = {r["id"]: r["content"] for r in source if "event" not in r}
    assert imported
    reply = await rig.say("311", "/import", attachment=Attachment("a.tar.gz", data))
    assert "Importado" in reply.text
    fake_groq.enqueue_text("Seguimos con la novela.")
    await rig.say("311", "¿Por dónde íbamos?")
    session = await rig.sessions.get("311")
    assert min(i.id for i in session.items) > max(imported)
    for item_id, content in imported.items():
        assert (await rig.context.original(session, item_id))["content"] == content


async def test_refused_archive_changes_nothing(rig, fake_groq):
    await populate(rig, fake_groq, "304")
    data = (await rig.say("304", "/export")).document.data
    # tamper: append a link member
    buf = io.BytesIO()
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as src, \
            tarfile.open(fileobj=buf, mode="w:gz") as out:
        for member in src:
            out.addfile(member, src.extractfile(member))
        link = tarfile.TarInfo("memory/snapshots/evil.md")
        link.type = tarfile.SYMTYPE
        link.linkname = "/etc/passwd"
        out.addfile(link)
    root = ChatPaths(rig.settings.data_dir, "305").root
    reply = await rig.say("305", "/import", attachment=Attachment("a.tar.gz", buf.getvalue()))
    assert reply.is_error and "enlace no permitido" in reply.text
    assert await rig.store.list("305") == []
    assert not (root / "memory").exists() and not list(root.glob(".import-*"))


@sqlite_only  # the CLI opens the store of the config file (SQLite here)
async def test_cli_export_and_import(rig, fake_groq, tmp_path):
    await populate(rig, fake_groq, "306")
    config = rig.settings.source
    out = tmp_path / "backup.tar.gz"
    code = await asyncio.to_thread(main, ["export", "--config", str(config), "--chat", "306",
                                          "--out", str(out)])
    assert code == 0 and out.stat().st_size > 0
    code = await asyncio.to_thread(main, ["import", str(out), "--config", str(config),
                                          "--chat", "307"])
    assert code == 0
    assert comparable(await rig.store.list("307")) == comparable(await rig.store.list("306"))
    assert ChatPaths(rig.settings.data_dir, "307").memory_md.exists()
    bad = tmp_path / "bad.tar.gz"
    bad.write_bytes(b"garbage")
    code = await asyncio.to_thread(main, ["import", str(bad), "--config", str(config),
                                          "--chat", "308"])
    assert code == 1
    code = await asyncio.to_thread(main, ["export", "--config", str(config), "--chat", "../x"])
    assert code == 1


async def test_import_history_whose_text_is_active_in_the_target_chat(rig, fake_groq):
    """An exported superseded "Vive en Lima" imported where "Vive en Lima" is active: merged,
    not an internal error (it used to pass through 'active' and hit the unique index)."""
    lima = (await rig.store.save("320", NewMemory("Vive en Lima", key="ciudad"))).memory
    await rig.store.supersede("320", lima.id, NewMemory("Vive en Madrid", key="ciudad"))
    data = (await rig.say("320", "/export")).document.data
    await rig.store.save("321", NewMemory("Vive en Lima", key="ciudad"))
    reply = await rig.say("321", "/import", attachment=Attachment("a.tar.gz", data))
    assert not reply.is_error and "📥 Importado: 2 recuerdos nuevos" in reply.text, reply.text
    rows = {(m.content, m.status.value) for m in await rig.store.list("321", status=None)}
    assert rows == {("Vive en Lima", "active"), ("Vive en Lima", "superseded"),
                    ("Vive en Madrid", "active")}


async def test_import_into_a_chat_that_already_talked_restores_profile_and_tape_once(
        rig, fake_groq):
    """The chat's own blank default profile does not win over the imported one; importing the
    same archive twice keeps one copy of its tape; /search finds the imported conversation."""
    await populate(rig, fake_groq, "320")
    src = ChatPaths(rig.settings.data_dir, "320")
    profile = "# Perfil\n\n- Se llama Ana y escribe novelas.\n"
    src.smma.joinpath("user_profile.md").write_text(profile, encoding="utf-8")
    data = (await rig.say("320", "/export")).document.data

    fake_groq.enqueue_text("¡Hola!")
    await rig.say("321", "Hola, soy nueva por aquí")        # defaults and a tape of its own
    dst = ChatPaths(rig.settings.data_dir, "321")
    assert dst.smma.joinpath("user_profile.md").read_text(encoding="utf-8") != profile
    for _ in range(2):
        reply = await rig.say("321", "/import", attachment=Attachment("a.tar.gz", data))
        assert "Importado" in reply.text
    assert dst.smma.joinpath("user_profile.md").read_text(encoding="utf-8") == profile
    assert len(list(dst.smma.glob("imported_session_log_*.jsonl"))) == 1
    assert "Hola, soy nueva" in dst.tape.read_text(encoding="utf-8")   # its own tape kept
    found = await rig.say("321", "/search novela Andes")
    assert "Estoy escribiendo una novela sobre los Andes" in found.text
