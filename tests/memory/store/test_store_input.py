"""Bad input from the issue: each is a clear MemoryInputError or a safe result, never a
corrupted database (PRAGMA integrity_check stays "ok" and nothing half-written is left)."""

from __future__ import annotations

from datetime import datetime

import pytest

from rumi.config import MemorySettings
from rumi.memory.store.memories import MemoryStore
from rumi.memory.store.models import MemoryInputError, MemoryType, NewMemory


async def _assert_clean(store: MemoryStore, chat: str = "1", active: int = 0) -> None:
    assert await store.integrity_check() == "ok"
    assert (await store.stats(chat))["active"] == active


@pytest.mark.parametrize("content", ["", "   ", "\n\t  \r\n", " \x0b ", "\u3000\u00a0"])
async def test_empty_content_is_refused(kw_store: MemoryStore, content: str) -> None:
    with pytest.raises(MemoryInputError, match="vacío"):
        await kw_store.save("1", NewMemory(content))
    await _assert_clean(kw_store)


async def test_one_megabyte_is_a_clear_error(kw_store: MemoryStore) -> None:
    huge = "a" * 1_000_000
    with pytest.raises(MemoryInputError, match="demasiado largo") as info:
        await kw_store.save("1", NewMemory(huge))
    assert len(str(info.value)) < 200
    limit = kw_store.settings.max_content_chars
    with pytest.raises(MemoryInputError):
        await kw_store.save("1", NewMemory("b" * (limit + 1)))
    ok = await kw_store.save("1", NewMemory("c" * limit))
    assert len(ok.memory.content) == limit
    await _assert_clean(kw_store, active=1)


@pytest.mark.parametrize("content", [
    b"\xff\xfe\x00\x01binary",
    b"\xc3\x28 invalid utf-8",
    "\x00\x01\x02\x03\x04\x05\x06\x07",
    "texto con NUL \x00 dentro",
    bytes(range(256)),
])
async def test_binary_or_invalid_utf8_is_refused(kw_store: MemoryStore, content: object) -> None:
    with pytest.raises(MemoryInputError):
        await kw_store.save("1", NewMemory(content))  # type: ignore[arg-type]
    await _assert_clean(kw_store)


async def test_valid_utf8_bytes_and_lone_surrogates_are_repaired(kw_store: MemoryStore) -> None:
    a = await kw_store.save("1", NewMemory("canción en bytes".encode()))  # type: ignore[arg-type]
    assert a.memory.content == "canción en bytes"
    b = await kw_store.save("1", NewMemory("roto \ud800 aquí"))
    assert b.memory.content == "roto \ufffd aquí"
    b.memory.content.encode("utf-8")
    assert [i for i, _ in await kw_store.keyword_search("1", "roto", 5)] == [b.memory.id]
    await _assert_clean(kw_store, active=2)


@pytest.mark.parametrize("field", ["importance", "confidence"])
@pytest.mark.parametrize("value", [float("nan"), float("inf"), -0.1, -1, 1.5, 2, "0.5", None, True])
async def test_bad_importance_or_confidence(kw_store: MemoryStore, field: str,
                                            value: object) -> None:
    with pytest.raises(MemoryInputError) as info:
        await kw_store.save("1", NewMemory("hola", **{field: value}))  # type: ignore[arg-type]
    assert "entre 0 y 1" in str(info.value)
    await _assert_clean(kw_store)


async def test_bad_type_source_dates_metadata(kw_store: MemoryStore) -> None:
    cases = [
        NewMemory("x", type="opinion"),  # type: ignore[arg-type]
        NewMemory("x", source="hacker"),  # type: ignore[arg-type]
        NewMemory("x", created_at="yesterday"),  # type: ignore[arg-type]
        NewMemory("x", metadata={"f": float("nan")}),
        NewMemory("x", metadata={"obj": object()}),
        NewMemory("x", metadata={"big": "z" * 20_000}),
        NewMemory("x", related_ids=("a",)),  # type: ignore[arg-type]
        NewMemory("x", key="k" * 500),
    ]
    for new in cases:
        with pytest.raises(MemoryInputError):
            await kw_store.save("1", new)
    with pytest.raises(MemoryInputError, match="Recuerdo 2"):
        await kw_store.save_many("1", [NewMemory("bien"), NewMemory("")])
    await _assert_clean(kw_store)  # the valid first item of the batch was not half-saved


async def test_naive_datetimes_are_utc_and_types_accept_strings(kw_store: MemoryStore) -> None:
    mem = (await kw_store.save("1", NewMemory("evento", type="episodic",  # type: ignore[arg-type]
                                              created_at=datetime(2023, 5, 8, 13, 56)))).memory
    assert mem.type == MemoryType.EPISODIC
    assert mem.created_at.isoformat() == "2023-05-08T13:56:00+00:00"
    # TTL counts from storage time, so an old event is not born expired
    assert mem.expires_at > datetime.now(mem.expires_at.tzinfo)


async def test_update_validates_like_save(kw_store: MemoryStore) -> None:
    mem = (await kw_store.save("1", NewMemory("hola"))).memory
    for kwargs in ({"content": ""}, {"content": "x" * 1_000_000}, {"importance": -1},
                   {"confidence": float("nan")}, {"type": "nope"}, {"content": b"\xff"}):
        with pytest.raises(MemoryInputError):
            await kw_store.update("1", mem.id, **kwargs)
    assert (await kw_store.get("1", mem.id)).content == "hola"
    await _assert_clean(kw_store, active=1)


async def test_content_limit_is_configurable(data_dir) -> None:
    st = await MemoryStore.open(data_dir / "rumi.db",
                                MemorySettings(embeddings_enabled=False, max_content_chars=100))
    try:
        with pytest.raises(MemoryInputError, match="máximo 100"):
            await st.save("1", NewMemory("x" * 101))
    finally:
        await st.close()


async def test_bad_ids_types_and_statuses_in_reads(kw_store: MemoryStore) -> None:
    mem = (await kw_store.save("1", NewMemory("hola"))).memory
    for bad in (["abc"], [True], [1.5], [None]):
        with pytest.raises(MemoryInputError):
            await kw_store.get_many("1", bad)
    assert await kw_store.get("1", str(mem.id)) == mem  # "12" is an id, 12.0 too
    assert await kw_store.get_many("1", [float(mem.id), -1, 0]) == [mem]
    with pytest.raises(MemoryInputError):
        await kw_store.list("1", types=["opinion"])
    with pytest.raises(MemoryInputError):
        await kw_store.list("1", status="zombie")
    with pytest.raises(MemoryInputError):
        await kw_store.mark_accessed("1", ["x"])


def test_fts_sanitiser_never_produces_invalid_syntax() -> None:
    """Property: for any text, the MATCH expressions we build are valid FTS5."""
    import sqlite3

    from hypothesis import given, settings
    from hypothesis import strategies as st

    from rumi.memory.store import fts
    from rumi.memory.store.schema import FTS_TOKENIZER

    conn = sqlite3.connect(":memory:")
    conn.execute(f"CREATE VIRTUAL TABLE t USING fts5(content, tokenize='{FTS_TOKENIZER}')")
    conn.execute("INSERT INTO t(content) VALUES ('canción café NEAR and OR not')")

    alphabet = st.sampled_from(list('"*-:^()+{}[],.;\'\\ NEARORANDNOT\x00\t\n') + ["NEAR(", "ñ",
                                                                                   "é", "😀"])
    texts = st.one_of(st.text(), st.lists(alphabet, max_size=40).map("".join))

    @settings(max_examples=300, deadline=None)
    @given(texts)
    def check(text: str) -> None:
        for build in (fts.any_of, fts.all_of, fts.phrase):
            expr = build(text)
            if expr is not None:
                conn.execute("SELECT rowid FROM t WHERE t MATCH ?", (expr,)).fetchall()

    check()
    conn.close()
