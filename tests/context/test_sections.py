"""Disk sections: packaged defaults, limits at load (truncate + warn) and at edit (reject)."""

from __future__ import annotations

import os
from typing import Any

from rumi.context import ContextEngine, TokenCounter
from rumi.context.sections import default_text
from rumi.sessions.state import SessionState
from tests.prompt_shape import automatic


def smma(engine: ContextEngine, session: SessionState):
    return engine.runtime(session).paths.smma


async def test_open_creates_defaults_once(engine: ContextEngine, session: SessionState) -> None:
    folder = smma(engine, session)
    names = sorted(p.name for p in folder.glob("*.md"))
    assert names == ["agent_notes.md", "current_task.md", "identity.md", "project_context.md",
                     "user_profile.md"]
    assert (folder / "identity.md").read_text() == default_text("identity.md")
    identity = default_text("identity.md")
    for topic in ("prune_messages", "summarize_range", "recall_original", "save_to_disk",
                  "load_from_disk", "edit_section", "Jerarquía de confianza",
                  "Registro inmutable"):
        assert topic in identity
    (folder / "user_profile.md").write_text("## Usuario\n- Nombre: Ana\n")
    await engine.open(session)
    await ContextEngine(engine.settings, engine.tokens, None).open(session)
    assert (folder / "user_profile.md").read_text() == "## Usuario\n- Nombre: Ana\n"


async def test_oversize_file_truncated_in_prompt_not_on_disk(
        engine: ContextEngine, session: SessionState, encoding: Any) -> None:
    path = smma(engine, session) / "user_profile.md"
    big = "## Usuario\n" + "".join(f"- preferencia número {n}\n" for n in range(1200))
    path.write_text(big)
    messages = await engine.build(session)
    body = messages[0]["content"].split("=== [3]")[1].split("=== [4]")[0]
    body = body.split("===\n\n", 1)[1].strip()
    assert "SECCIÓN TRUNCADA" in body and "user_profile.md" in body
    assert len(encoding.encode(body)) <= engine.cfg.section_budgets["user_profile"]
    assert body.startswith("## Usuario\n- preferencia número 0")
    assert "Sección user_profile truncada al cargar" in automatic(messages)
    assert path.read_text() == big


async def test_human_edit_is_picked_up(engine: ContextEngine, session: SessionState) -> None:
    await engine.build(session)
    path = smma(engine, session) / "agent_notes.md"
    path.write_text("## Notas\n- el humano dice: usa SQLite\n")
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    system = (await engine.build(session))[0]["content"]
    assert "el humano dice: usa SQLite" in system


async def test_missing_file_counts_as_not_loaded(engine: ContextEngine,
                                                 session: SessionState) -> None:
    (smma(engine, session) / "project_context.md").unlink()
    messages = await engine.build(session)
    assert "Secciones en disco cargadas: 4/5" in automatic(messages)
    assert "(no cargada: archivo no encontrado)" in messages[0]["content"]
    await ContextEngine(engine.settings, engine.tokens, None).open(session)
    assert (smma(engine, session) / "project_context.md").exists()


async def test_budgets_come_from_config(make_settings, counter: TokenCounter) -> None:
    settings = make_settings(
        "[context.section_budgets]\nidentity = 2000\ndashboard = 300\nuser_profile = 50\n"
        "project_context = 5000\ncurrent_task = 3000\nagent_notes = 40\n"
        "action_log = 20000\nrecalled_memories = 1500\n")
    engine = ContextEngine(settings, counter, None)
    session = SessionState(chat_id="99")
    await engine.open(session)
    sections = engine.runtime(session).files.sections
    assert sections["user_profile"].limit == 50 and sections["agent_notes"].limit == 40
    rejected = await engine_edit(engine, session, "agent_notes", "- nota " * 30)
    assert rejected.is_error and "admite 40" in rejected.content
    accepted = await engine_edit(engine, session, "agent_notes", "- nota corta")
    assert not accepted.is_error


async def engine_edit(engine: ContextEngine, session: SessionState, name: str, content: str):
    from tests.context.conftest import Calls

    return await Calls(engine, session)("edit_section", section_name=name, new_content=content)


async def test_operator_templates_seed_new_chats(engine: ContextEngine) -> None:
    templates = engine.settings.data_dir / "smma_defaults"
    templates.mkdir()
    (templates / "identity.md").write_text("# Rumi de la familia\nHabla siempre de tú.\n")
    session = SessionState(chat_id="nuevo")
    await engine.open(session)
    system = (await engine.build(session))[0]["content"]
    assert "Rumi de la familia" in system
    assert "## Tarea actual" in system  # files without a template use the packaged default


async def test_huge_section_file_is_read_only_up_to_its_limit(
        engine: ContextEngine, session: SessionState, encoding: Any) -> None:
    """A 56 MB .smma file used to be read and tokenised whole (719 MB of RSS)."""
    from rumi.context.sections import BYTES_PER_TOKEN_CAP

    path = smma(engine, session) / "project_context.md"
    with path.open("w") as handle:
        handle.write("## Proyecto\n")
        for n in range(1_000_000):
            handle.write(f"- línea {n} de un archivo enorme\n")
    assert path.stat().st_size > 30_000_000
    system = (await engine.build(session))[0]["content"]
    section = engine.runtime(session).files.sections["project_context"]
    assert section.truncated and section.loaded
    assert f"{path.stat().st_size:,} bytes" in (section.error or "")
    assert section.raw_tokens <= section.limit * BYTES_PER_TOKEN_CAP  # only the cap was read
    assert "## Proyecto\n- línea 0 de un archivo enorme" in system
    assert "SECCIÓN TRUNCADA" in system


async def test_fifo_in_place_of_a_section_file_is_not_loaded(
        engine: ContextEngine, session: SessionState) -> None:
    await engine.build(session)
    path = smma(engine, session) / "agent_notes.md"
    path.unlink()
    os.mkfifo(path)
    system = (await engine.build(session))[0]["content"]  # returns: no blocking open
    section = engine.runtime(session).files.sections["agent_notes"]
    assert not section.loaded and "FIFO" in (section.error or "")
    assert "FIFO" in system
