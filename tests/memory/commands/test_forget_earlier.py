"""`/forget <text>` finds what `/redact` finds in memories: a text only an earlier version
holds (a memory replaced under the same key, or a line edited in MEMORY.md) used to get
"nothing matches" while `/redact` still found it. Real store, real commands through the
assistant, fake Groq."""

from __future__ import annotations

import uuid

from rumi.memory.store.codec import content_hash
from rumi.paths import ChatPaths


async def _all_texts(store, chat: str) -> str:
    rows = await store.list(chat, status=None, limit=1000)
    return "\n".join(f"{m.content} {m.key} {m.metadata}" for m in rows)


async def test_forget_erases_a_text_only_an_earlier_version_holds(rig):
    chat, name = "2601", "Pancracio" + uuid.uuid4().hex[:6]
    await rig.say(chat, f"/remember loro: se llama {name}")
    await rig.say(chat, "/remember loro: se llama Paco")     # the first becomes history
    assert name in await _all_texts(rig.store, chat)

    reply = await rig.say(chat, f"/forget {name}")
    assert "No encontré" not in reply.text
    assert "Borré 1 versión anterior que lo decía (de #" in reply.text   # says what went,
    assert "#2" in reply.text                                        # in the right number
    assert name not in await _all_texts(rig.store, chat)                # gone from the store
    [current] = await rig.store.list(chat, limit=10)
    assert current.content == "se llama Paco"                          # the current one kept
    md = ChatPaths(rig.settings.data_dir, chat).memory_md.read_text(encoding="utf-8")
    assert "Paco" in md and name not in md
    assert "nada" in (await rig.say(chat, f"/redact {name}")).text.lower()  # nothing left


async def test_forget_erases_a_text_only_a_pre_edit_version_holds(rig):
    chat, old = "2602", "Ruperto" + uuid.uuid4().hex[:6]
    await rig.say(chat, f"/remember el gato se llama {old}")
    [memory] = await rig.store.list(chat, limit=10)
    await rig.store.update(chat, memory.id, content="el gato se llama Misha",
                           metadata={"edited_from": [memory.content]})   # a MEMORY.md edit

    reply = await rig.say(chat, f"/forget {old}")
    assert "No encontré" not in reply.text and f"#{memory.id}" in reply.text
    assert old not in await _all_texts(rig.store, chat)
    assert [m.content for m in await rig.store.list(chat, limit=10)] == ["el gato se llama Misha"]
    gone = content_hash(memory.content, memory.key)
    assert await rig.store.forgotten(chat, [gone]) == {gone}      # not learned again by itself


async def test_forget_still_says_nothing_matches_when_nothing_does(rig):
    chat = "2603"
    await rig.say(chat, "/remember loro: se llama Paco")
    reply = await rig.say(chat, "/forget Bartolomeo")
    assert "No encontré nada" in reply.text
    assert len(await rig.store.list(chat, limit=10)) == 1


async def test_forgetting_by_words_also_erases_other_memories_earlier_versions(rig):
    chat, name = "2604", "Pancracio" + uuid.uuid4().hex[:6]
    await rig.say(chat, f"/remember loro: se llama {name}")
    await rig.say(chat, "/remember loro: se llama Paco")            # #1 is now history of #2
    await rig.say(chat, f"/remember mi vecino también se llama {name}")
    reply = await rig.say(chat, f"/forget {name}")                   # one current match: #3
    assert "Olvidado" in reply.text and "#2" in reply.text           # and #2's earlier version
    assert name not in await _all_texts(rig.store, chat)
    assert [m.content for m in await rig.store.list(chat, limit=10)] == ["se llama Paco"]
