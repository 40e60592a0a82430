"""Context blocks on both stores (rumi.db's `blocks`, PostgreSQL's `cto.blocks`): scopes,
priority order, upsert by code, isolation, validation."""

from __future__ import annotations

import pytest

from rumi.memory.store.api import MemoryStoreAPI as MemoryStore
from rumi.memory.store.blocks import BlockScope, BlockStatus, BlockStore, estimate_tokens
from rumi.memory.store.models import MemoryInputError


async def test_scopes_priority_and_isolation(kw_store: MemoryStore) -> None:
    blocks = BlockStore(kw_store)
    rules = await blocks.upsert("system_rules", "Responde siempre en español.", priority=100,
                                category="rules", name="Reglas")
    persona = await blocks.upsert("persona", "Eres Rumi.", priority=200)
    mine = await blocks.upsert("proyecto", "Trabaja en Rumi.", scope="chat", chat_id="1",
                               priority=150)
    theirs = await blocks.upsert("proyecto", "Secreto del chat 2.", scope="chat", chat_id="2",
                                 priority=150)
    sess = await blocks.upsert("tarea", "Arreglar el test.", scope=BlockScope.SESSION,
                               chat_id="1", session_id="s1", priority=10)
    assert rules.token_count == estimate_tokens("Responde siempre en español.")
    assert rules.scope == BlockScope.GLOBAL and rules.chat_id is None
    assert [b.id for b in await blocks.active_for("1")] == [persona.id, mine.id, rules.id]
    assert [b.id for b in await blocks.active_for("1", "s1")] == [persona.id, mine.id,
                                                                 rules.id, sess.id]
    assert [b.id for b in await blocks.active_for("2", "s1")] == [persona.id, theirs.id, rules.id]
    assert [b.id for b in await blocks.active_for("3")] == [persona.id, rules.id]
    assert theirs.id not in {b.id for b in await blocks.list("1")}
    # chat 1 cannot switch off or delete chat 2's block
    assert not await blocks.set_status(theirs.id, BlockStatus.INACTIVE, chat_id="1")
    assert not await blocks.delete(theirs.id, chat_id="1")
    assert await blocks.set_status(rules.id, "inactive")
    assert [b.code for b in await blocks.active_for("1")] == ["persona", "proyecto"]
    assert [b.code for b in await blocks.list(status="inactive")] == ["system_rules"]
    assert await blocks.delete(mine.id, chat_id="1")
    assert await blocks.get("proyecto", scope="chat", chat_id="1") is None


async def test_upsert_replaces_by_code_and_uses_injected_counter(kw_store: MemoryStore) -> None:
    blocks = BlockStore(kw_store, count_tokens=lambda text: len(text.split()))
    first = await blocks.upsert("dev_config", "uno dos tres")
    second = await blocks.upsert("dev_config", "uno dos tres cuatro", priority=5,
                                 metadata={"v": 2})
    assert second.id == first.id and second.token_count == 4 and second.priority == 5
    assert second.content_hash != first.content_hash and second.metadata == {"v": 2}
    assert len(await blocks.list()) == 1
    explicit = await blocks.upsert("given", "texto", token_count=42)
    assert explicit.token_count == 42


@pytest.mark.parametrize("kwargs", [
    {"code": "Bad Code!", "content": "x"},
    {"code": "ok", "content": ""},
    {"code": "ok", "content": "x" * 1_000_000},
    {"code": "ok", "content": b"\xff\xfe"},
    {"code": "ok", "content": "x", "scope": "planet"},
    {"code": "ok", "content": "x", "scope": "chat"},
    {"code": "ok", "content": "x", "scope": "chat", "chat_id": "../etc"},
    {"code": "ok", "content": "x", "scope": "session", "chat_id": "1"},
    {"code": "ok", "content": "x", "scope": "global", "chat_id": "1"},
    {"code": "ok", "content": "x", "priority": 1.5},
    {"code": "ok", "content": "x", "token_count": -3},
    {"code": "ok", "content": "x", "status": "zombie"},
])
async def test_bad_blocks_are_refused(kw_store: MemoryStore, kwargs: dict) -> None:
    blocks = BlockStore(kw_store)
    with pytest.raises(MemoryInputError):
        await blocks.upsert(**kwargs)
    assert await blocks.list(status=None) == []
    assert await kw_store.integrity_check() == "ok"
