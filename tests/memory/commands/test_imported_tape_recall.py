"""An imported conversation is reachable: its messages are named `imp…:id` (their ids repeat
the chat's own), `recall_original` answers them byte for byte through the agent loop and the
fake Groq, `/search` and `search_memory` find them, and importing again changes no name."""

from __future__ import annotations

import json
import re

from rumi.base.replies import Attachment
from rumi.base.tools import ToolContext
from rumi.paths import ChatPaths

TRICKY = 'La novela andina: "capítulo 1"\n\tcon \\ barra, ☃ y ñandú'


def tool_results(fake_groq) -> list[str]:
    """The tool messages of the last chat request (what the model was given)."""
    chat = [r for r in fake_groq.requests if "response_format" not in r][-1]
    return [m["content"] for m in chat["messages"] if m.get("role") == "tool"]


async def recall(rig, fake_groq, chat: str, message_id: object) -> str:
    fake_groq.enqueue_tool_call("recall_original", {"message_id": message_id})
    fake_groq.enqueue_text("Listo.")
    await rig.say(chat, "¿Qué te conté entonces?")
    return tool_results(fake_groq)[-1]


async def test_imported_messages_are_recalled_and_found_by_their_tag(rig, fake_groq):
    fake_groq.enqueue_text("¡Qué bien!")
    await rig.say("400", TRICKY)
    data = (await rig.say("400", "/export")).document.data
    source = [r for r in await rig.context.runtime(await rig.sessions.get("400")).tape.records()
              if "event" not in r]
    original = next(r for r in source if r["content"] == TRICKY)

    fake_groq.enqueue_text("¡Hola, Ana!")
    await rig.say("401", "Hola, soy nueva por aquí")       # its own tape: ids collide
    reply = await rig.say("401", "/import", attachment=Attachment("a.tar.gz", data))
    assert "Importado" in reply.text
    dst = ChatPaths(rig.settings.data_dir, "401")
    [(tag, path)] = dst.imported_tapes()
    ref = f"{tag}:{original['id']}"

    found = (await rig.say("401", "/search novela andina")).text
    assert f"[#{ref}]" in found, found
    own = (await rig.say("401", "/search nueva")).text
    assert "[#1] Hola, soy nueva" in own and "imp" not in own     # its own tape, own ids

    result = await recall(rig, fake_groq, "401", ref)
    assert result.endswith("\n" + TRICKY)                          # byte for byte
    assert f"#{ref}" in result and "importada" in result
    assert (await recall(rig, fake_groq, "401", f"#{ref}")).endswith("\n" + TRICKY)
    mine = await recall(rig, fake_groq, "401", original["id"])     # the same number, own tape
    assert not mine.endswith("\n" + TRICKY)
    assert "no está en el registro" in await recall(rig, fake_groq, "401", f"{tag}:999")
    assert "no es un id" in await recall(rig, fake_groq, "401", "../../etc/passwd")
    assert "no está en el registro" in await recall(rig, fake_groq, "401", "impnope:1")

    ctx = ToolContext(chat_id="401", session=await rig.sessions.get("401"))
    tool = await rig.tools.execute("search_memory", json.dumps({"query": "ñandu"}), ctx)
    assert f"[#{ref}]" in tool.content

    # importing the same archive again: one file, the same tag, the same names
    reply = await rig.say("401", "/import", attachment=Attachment("a.tar.gz", data))
    assert "Importado" in reply.text
    assert dst.imported_tapes() == [(tag, path)]
    again = (await rig.say("401", "/search novela andina")).text
    assert again.count("novela andina") == found.count("novela andina")
    assert (await recall(rig, fake_groq, "401", ref)).endswith("\n" + TRICKY)


async def test_two_archives_imported_in_one_second_keep_both_tapes(rig, fake_groq):
    """The tag is the import time: a second import in the same second must not replace the
    first tape (it used to get the same file name)."""
    datas = []
    for chat, text in (("410", "Mi primer gato se llamaba Tigre"),
                       ("411", "Mi primer perro se llamaba Rayo")):
        fake_groq.enqueue_text("¡Qué bonito!")
        await rig.say(chat, text)
        datas.append((await rig.say(chat, "/export")).document.data)
    fake_groq.enqueue_text("Hola")
    await rig.say("412", "Hola")
    for data in datas:
        await rig.say("412", "/import", attachment=Attachment("a.tar.gz", data))
    tapes = ChatPaths(rig.settings.data_dir, "412").imported_tapes()
    assert len(tapes) == 2 and len({tag for tag, _ in tapes}) == 2
    text = (await rig.say("412", "/search primer llamaba")).text
    refs = re.findall(r"\[#(imp[^\]]+)\]", text)
    assert len(refs) == 2 and {r.split(":")[0] for r in refs} == {t for t, _ in tapes}
    assert "Tigre" in text and "Rayo" in text
