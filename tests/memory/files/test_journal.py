"""Daily logs (append-only, local timezone) and /clear snapshots (LLM slug, deduplicated)."""

from __future__ import annotations

from datetime import UTC, datetime

from rumi.llm.client import LLMClient
from rumi.memory.files.journal import Journal, slugify
from rumi.paths import ChatPaths
from rumi.sessions.state import ContextItem


def items(n: int) -> list[ContextItem]:
    out = []
    for i in range(1, n + 1):
        role = "user" if i % 2 else "assistant"
        out.append(ContextItem(id=i, role=role, content=f"mensaje número {i}"))
    return out


async def test_daily_log_is_append_only_and_uses_the_configured_timezone(data_dir):
    # 23:30 UTC on Jan 1st is already Jan 2nd in Madrid (UTC+1).
    now = datetime(2026, 1, 1, 23, 30, tzinfo=UTC)
    journal = Journal(data_dir, "Europe/Madrid", clock=lambda: now)
    path = await journal.append_events("42", ["Terminó el informe", "  "])
    assert path == ChatPaths(data_dir, "42").memory_dir / "2026-01-02.md"
    first = path.read_text(encoding="utf-8")
    await journal.append_events("42", ["Reservó el vuelo"])
    second = path.read_text(encoding="utf-8")
    assert second.startswith(first)
    assert second.count("# 2026-01-02") == 1
    assert "- 00:30 Terminó el informe" in second
    assert "- 00:30 Reservó el vuelo" in second
    assert await journal.append_events("42", []) is None


async def test_recent_block_has_today_and_yesterday_within_budget(data_dir):
    now = datetime(2026, 3, 10, 12, 0, tzinfo=UTC)
    journal = Journal(data_dir, "UTC", clock=lambda: now)
    await journal.append_events("7", ["evento antiguo"], now=datetime(2026, 3, 8, 9, tzinfo=UTC))
    await journal.append_events("7", ["evento de ayer"], now=datetime(2026, 3, 9, 9, tzinfo=UTC))
    await journal.append_events("7", [f"evento de hoy {i}" for i in range(50)])
    full = await journal.recent_block("7", 10_000)
    assert "evento de ayer" in full and "evento de hoy 49" in full
    assert "evento antiguo" not in full
    small = await journal.recent_block("7", 40)
    assert "evento de hoy 49" in small
    assert "evento de ayer" not in small
    assert len(small) // 4 + 1 <= 40
    # older logs stay searchable
    hits = await journal.search("7", "ANTIGUO")
    assert [h.day for h in hits] == ["2026-03-08"]
    assert await journal.days("7") == sorted(await journal.days("7"))


async def test_snapshot_uses_llm_slug_keeps_last_15_and_never_overwrites(data_dir, fake_groq,
                                                                          make_settings):
    settings = make_settings(f'[llm]\napi_key = "k"\nbase_url = "{fake_groq.base_url}"\n')
    llm = LLMClient(settings.llm)
    now = datetime(2026, 5, 4, 18, 0, tzinfo=UTC)
    journal = Journal(data_dir, "UTC", clock=lambda: now, llm=llm)
    try:
        fake_groq.enqueue_text("Planificación del Viaje a Perú!")
        fake_groq.enqueue_text("Planificación del viaje a Perú")
        first = await journal.write_snapshot("9", items(20))
        second = await journal.write_snapshot("9", items(20))
    finally:
        await llm.close()
    assert first.name == "2026-05-04-planificacion-del-viaje-a-peru.md"
    assert second.name == "2026-05-04-planificacion-del-viaje-a-peru-2.md"
    text = first.read_text(encoding="utf-8")
    assert "mensaje número 6" in text and "mensaje número 20" in text
    assert "mensaje número 5\n" not in text
    assert text.count("[#") == 15
    assert list(first.parent.glob(".*")) == []


async def test_snapshot_slug_falls_back_when_model_fails(data_dir, fake_groq, make_settings):
    settings = make_settings(
        f'[llm]\napi_key = "k"\nbase_url = "{fake_groq.base_url}"\nmax_retries = 0\n')
    llm = LLMClient(settings.llm)
    journal = Journal(data_dir, "UTC", llm=llm)
    try:
        fake_groq.enqueue_error(400, "bad")
        path = await journal.write_snapshot("9", items(3))
    finally:
        await llm.close()
    assert path.name.endswith("-sesion.md")
    assert await journal.write_snapshot("9", []) is None


def test_slugify_is_filesystem_safe():
    assert slugify("../../etc/passwd") == "etc-passwd"
    assert slugify("...") == "sesion"
    assert slugify("Ñandú y café ☕") == "nandu-y-cafe"
    assert len(slugify("palabra " * 50)) <= 40
