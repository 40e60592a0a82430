"""End to end through Telegram: /remember, /export → sendDocument, the archive sent back with
caption /import into another chat, a MEMORY.md edit, and a malformed edit noticed in the chat."""

from __future__ import annotations

import io
import tarfile

import pytest

from rumi.paths import ChatPaths
from tests.e2e.conftest import ALICE, bot_settings, fake_telegram, start_bot  # noqa: F401
from tests.memory.lifecycle.test_markdown_sync import atomic_save, eventually

pytestmark = pytest.mark.e2e

OTHER_CHAT = 2222


async def test_export_then_import_into_another_chat(start_bot, fake_telegram):  # noqa: F811
    bot = await start_bot()
    fake_telegram.push_text(ALICE, ALICE, "/remember ciudad: Lima")
    [ok] = await fake_telegram.wait_for_sent(1)
    assert "ciudad: Lima" in ok.text
    fake_telegram.push_text(ALICE, ALICE, "/export")
    sent = await fake_telegram.wait_for_sent(3)
    document = next(s for s in sent if s.method == "sendDocument")
    assert document.document_name.endswith(".tar.gz") and document.chat_id == ALICE
    with tarfile.open(fileobj=io.BytesIO(document.document), mode="r:gz") as tar:
        assert "memories.jsonl" in tar.getnames()

    fake_telegram.push_document(ALICE, OTHER_CHAT, document.document_name, document.document,
                                caption="/import")
    sent = await fake_telegram.wait_for_sent(4)
    assert "📥 Importado: 1 recuerdos nuevos" in sent[-1].text
    store = bot.app.parts["memory_store"]
    assert [m.content for m in await store.list(str(OTHER_CHAT))] == ["Lima"]

    # a person edits MEMORY.md of the new chat; the watcher updates the store
    settings = bot.app.settings
    md = ChatPaths(settings.data_dir, str(OTHER_CHAT)).memory_md
    atomic_save(md, md.read_text(encoding="utf-8").replace("Lima", "Cusco"))

    async def moved():
        return [m.content for m in await store.list(str(OTHER_CHAT))] == ["Cusco"]

    await eventually(moved)
    [cusco] = await store.list(str(OTHER_CHAT))
    await eventually(lambda: f"[#{cusco.id}] **ciudad**: Cusco" in md.read_text(encoding="utf-8"))
    # a malformed edit is reported in the chat and kept aside, never lost
    broken = md.read_text(encoding="utf-8") + "\ntexto suelto sin guion\n"
    atomic_save(md, broken)
    runtime = bot.app.parts["memory"]
    await eventually(lambda: str(OTHER_CHAT) in runtime.sync.problems)
    # the Telegram channel can message unprompted: the notice reaches the chat
    await eventually(lambda: any("MEMORY.md" in (s.text or "") and s.chat_id == OTHER_CHAT
                                 for s in fake_telegram.sent))
    count = len(fake_telegram.sent)
    fake_telegram.push_text(ALICE, OTHER_CHAT, "/memory")
    sent = await fake_telegram.wait_for_sent(count + 1)
    assert "no se pudo aplicar" in sent[count].text and "línea" in sent[count].text
    [kept] = md.parent.glob("MEMORY.md.rejected-*")
    assert kept.read_text(encoding="utf-8") == broken and kept.name in sent[count].text
    fake_telegram.push_text(ALICE, OTHER_CHAT, "/remember Tiene un loro")
    sent = await fake_telegram.wait_for_sent(count + 2)
    assert "Tiene un loro" in sent[count + 1].text
    # the file was rewritten from the database, so syncing never stops
    await eventually(lambda: "Tiene un loro" in md.read_text(encoding="utf-8"))


async def test_forget_with_several_matches_offers_inline_buttons(start_bot,  # noqa: F811
                                                                 fake_telegram):  # noqa: F811
    """/forget with several matches: an inline keyboard; a press forgets exactly the memory
    on the button (by id), is answered, removes the keyboard; Cancelar forgets nothing."""
    import json

    from tests.e2e.conftest import MALLORY

    bot = await start_bot()
    store = bot.app.parts["memory_store"]
    for n, text in enumerate(["/remember Le gusta el té verde", "/remember Le gusta el té negro",
                              "/remember Le gusta el té rojo"], start=1):
        fake_telegram.push_text(ALICE, ALICE, text)
        await fake_telegram.wait_for_sent(n)
    fake_telegram.push_text(ALICE, ALICE, "/forget té")
    [*_, listing] = await fake_telegram.wait_for_sent(4)
    assert "Encontré 3 recuerdos" in listing.text and "/forget <número>" in listing.text
    markup = listing.params["reply_markup"]
    rows = (json.loads(markup) if isinstance(markup, str) else markup)["inline_keyboard"]
    content = {f"/forget #{m.id}": m.content for m in await store.list(str(ALICE))}
    assert [len(row) for row in rows] == [1, 1, 1, 2]
    for [button] in rows[:3]:     # each button names its memory by id, and shows its text
        assert content[button["callback_data"]] in button["text"]
    assert [b["callback_data"] for b in rows[3]] == ["/forget todos", "/forget no"]
    negro = next(b["callback_data"] for [b] in rows[:3] if "té negro" in b["text"])

    # someone not allowed cannot use the buttons
    fake_telegram.push_callback(MALLORY, ALICE, listing.message_id, negro)
    await fake_telegram.wait_for_sent(5)
    assert len(await store.list(str(ALICE))) == 3

    query = fake_telegram.push_callback(ALICE, ALICE, listing.message_id, negro)
    [*_, done] = await fake_telegram.wait_for_sent(6)
    assert f"Olvidado: memoria {negro.removeprefix('/forget ')}." in done.text
    assert "té negro" not in done.text
    assert query in fake_telegram.answered_callbacks
    await fake_telegram.wait_for_call("editMessageReplyMarkup")
    assert sorted(m.content for m in await store.list(str(ALICE))) == [
        "Le gusta el té rojo", "Le gusta el té verde"]

    fake_telegram.push_text(ALICE, ALICE, "/forget té")
    [*_, listing] = await fake_telegram.wait_for_sent(7)
    fake_telegram.push_callback(ALICE, ALICE, listing.message_id, "/forget no")
    [*_, cancelled] = await fake_telegram.wait_for_sent(8)
    assert "no olvido nada" in cancelled.text and len(await store.list(str(ALICE))) == 2


async def test_an_empty_memory_md_save_is_held_and_confirmed_with_buttons(
        start_bot, fake_telegram):  # noqa: F811
    """"Select all, delete, save" through the real bot: nothing forgotten until the person
    presses the button; «No» keeps everything, «Sí» (after another empty save) forgets."""
    import json

    bot = await start_bot()
    store = bot.app.parts["memory_store"]
    for n in range(1, 4):
        fake_telegram.push_text(ALICE, ALICE, f"/remember Recuerdo importante {n}")
        await fake_telegram.wait_for_sent(n)
    md = ChatPaths(bot.app.settings.data_dir, str(ALICE)).memory_md
    await eventually(lambda: md.read_text(encoding="utf-8").count("Recuerdo importante") == 3)

    def question():
        return next((s for s in fake_telegram.sent if "olvidaría 3 de 3" in (s.text or "")),
                    None)

    md.write_text("", encoding="utf-8")
    await eventually(question)
    asked = question()
    rows = json.loads(asked.params["reply_markup"]) if isinstance(
        asked.params["reply_markup"], str) else asked.params["reply_markup"]
    assert [b["callback_data"] for b in rows["inline_keyboard"][0]] == [
        "/memorymd si", "/memorymd no"]
    assert len(await store.list(str(ALICE))) == 3
    await eventually(lambda: md.read_text(encoding="utf-8").count("Recuerdo importante") == 3)
    count = len(fake_telegram.sent)
    fake_telegram.push_callback(ALICE, ALICE, asked.message_id, "/memorymd no")
    [*_, answer] = await fake_telegram.wait_for_sent(count + 1)
    assert "No olvido nada" in answer.text and len(await store.list(str(ALICE))) == 3

    fake_telegram.sent.clear()
    md.write_text("", encoding="utf-8")
    await eventually(question)
    fake_telegram.push_callback(ALICE, ALICE, question().message_id, "/memorymd si")
    await eventually(lambda: any("3 olvidados" in (s.text or "") for s in fake_telegram.sent))
    assert await store.list(str(ALICE)) == []
    assert "Recuerdo importante" not in md.read_text(encoding="utf-8")


async def test_forget_offers_redaction_with_buttons_and_si_erases_the_words(
        start_bot, fake_telegram, fake_groq):  # noqa: F811
    """/forget of a text that was also said: «¿Borro también…?» with Sí/No buttons; the Sí
    button tombstones the messages on the tape and the reply says what went and where."""
    import json

    bot = await start_bot()
    store = bot.app.parts["memory_store"]
    fake_groq.enqueue_text("Anotado.")
    fake_telegram.push_text(ALICE, ALICE, "La alarma de casa es 4471-zq")
    await fake_telegram.wait_for_sent(1)
    fake_telegram.push_text(ALICE, ALICE, "/remember alarma: 4471-zq")
    await fake_telegram.wait_for_sent(2)
    fake_telegram.push_text(ALICE, ALICE, "/forget 4471-zq")
    [*_, asked] = await fake_telegram.wait_for_sent(3)
    assert "¿Borro también la mención en el historial?" in asked.text
    assert "4471" not in asked.text
    markup = asked.params["reply_markup"]
    rows = (json.loads(markup) if isinstance(markup, str) else markup)["inline_keyboard"]
    assert [b["callback_data"] for b in rows[0]] == ["/redact sí", "/redact no"]
    assert await store.list(str(ALICE)) == []          # the memory went at once

    fake_telegram.push_callback(ALICE, ALICE, asked.message_id, "/redact sí")
    [*_, done] = await fake_telegram.wait_for_sent(4)
    assert done.text.startswith("✂️ Borrado: memoria #1 y 1 mención en el historial")
    tape = ChatPaths(bot.app.settings.data_dir, str(ALICE)).tape.read_text(encoding="utf-8")
    assert "4471" not in tape and tape.count("[borrado a petición del usuario]") == 1
    # the inbox journal (at-least-once answering) no longer holds the answered messages' text
    inbox = bot.app.settings.data_dir / "inbox" / "telegram.jsonl"
    assert "4471" not in inbox.read_text(encoding="utf-8")
