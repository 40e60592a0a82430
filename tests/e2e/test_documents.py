"""File plumbing: a document captioned /import reaches the registered handler; /export's
document reaches the person (the archive logic itself is the memory part's)."""

from __future__ import annotations

import pytest

from rumi import messages as msg
from rumi.base.commands import CommandRequest
from rumi.base.replies import Reply, ReplyDocument
from tests.e2e.conftest import ALICE

pytestmark = pytest.mark.e2e


async def test_import_document_reaches_handler(start_bot, fake_telegram) -> None:
    bot = await start_bot()
    got: list[CommandRequest] = []

    async def importer(request: CommandRequest) -> Reply:
        got.append(request)
        assert request.attachment is not None
        return Reply(f"Importé {len(request.attachment.data)} bytes", markdown=False)

    bot.app.assistant.register_command("import", importer)
    payload = b'{"type": "fact", "content": "le gusta el t\xc3\xa9"}\n'
    fake_telegram.push_document(ALICE, ALICE, "memoria.jsonl", payload, caption="/import")
    [sent] = await fake_telegram.wait_for_sent(1)
    assert sent.text == f"Importé {len(payload)} bytes"
    assert got[0].attachment is not None and got[0].attachment.data == payload
    assert got[0].attachment.filename == "memoria.jsonl"
    assert got[0].session is not None and got[0].session.chat_id == str(ALICE)


async def test_document_without_import_is_explained(start_bot, fake_telegram,
                                                    fake_groq) -> None:
    await start_bot()
    fake_telegram.push_document(ALICE, ALICE, "foto.bin", b"\x00\x01")
    [sent] = await fake_telegram.wait_for_sent(1)
    assert sent.text == msg.DOCUMENT_UNSUPPORTED.format(name="foto.bin")
    assert fake_groq.requests == []


async def test_export_sends_a_document(start_bot, fake_telegram) -> None:
    bot = await start_bot()

    async def exporter(request: CommandRequest) -> Reply:
        return Reply("Aquí tienes tu memoria.", markdown=False,
                     document=ReplyDocument("rumi-export.jsonl", b"line1\nline2\n",
                                            caption="Exportación"))

    bot.app.assistant.register_command("export", exporter)
    fake_telegram.push_text(ALICE, ALICE, "/export")
    sent = await fake_telegram.wait_for_sent(2)
    assert sent[0].text == "Aquí tienes tu memoria."
    assert sent[1].method == "sendDocument" and sent[1].document == b"line1\nline2\n"
    assert sent[1].document_name == "rumi-export.jsonl" and sent[1].caption == "Exportación"


async def test_unregistered_memory_command_is_honest(start_bot, fake_telegram, fake_groq
                                                      ) -> None:
    bot = await start_bot()
    bot.app.assistant.commands.unregister("pin")
    fake_telegram.push_text(ALICE, ALICE, "/pin 3")
    [sent] = await fake_telegram.wait_for_sent(1)
    assert sent.text == msg.FEATURE_COMING.format(name="pin")
    assert fake_groq.requests == []


async def test_oversized_import_is_refused_without_download(start_bot, fake_telegram,
                                                            monkeypatch) -> None:
    import rumi.channels.telegram_turns as channel_module

    monkeypatch.setattr(channel_module, "MAX_IMPORT_BYTES", 8)
    await start_bot()
    fake_telegram.push_document(ALICE, ALICE, "grande.tar.gz", b"x" * 64, caption="/import")
    [sent] = await fake_telegram.wait_for_sent(1)
    assert sent.text == msg.DOCUMENT_TOO_LARGE.format(max_mb=0)
    assert not any(method == "getFile" for method, _ in fake_telegram.calls)
