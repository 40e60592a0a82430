"""What a document becomes: accepted or refused by its content, named safely, and the path the
agent is told (the Docker side is tests/e2e/test_media_sandbox.py)."""

from __future__ import annotations

import pytest

from rumi import messages as msg
from rumi.base.feature import SaveFailed
from rumi.base.replies import Attachment, InputRefused
from rumi.config import DocumentSettings
from rumi.media.documents import DocumentService, is_supported, safe_name


def test_supported_by_content_not_only_by_name() -> None:
    assert is_supported("a.pdf", None, b"%PDF-1.7\n...")
    assert not is_supported("a.pdf", "application/pdf", b"MZ not a pdf")
    assert is_supported("gastos.csv", "text/csv", "fecha,importe\n1,é\n".encode())
    assert is_supported("sin_extension", "text/plain", b"hola")
    assert not is_supported("notas.txt", "text/plain", b"ho\x00la")
    assert not is_supported("notas.txt", "text/plain", b"\xff\xfe\xfa")
    assert not is_supported("foto.bin", "application/octet-stream", b"hola")
    assert not is_supported("libro.docx", None, b"PK\x03\x04")


def test_safe_name_keeps_files_inside_their_folder() -> None:
    assert safe_name("../../etc/passwd") == "passwd"
    assert safe_name("C:\\Users\\ana\\informe final.pdf") == "informe final.pdf"
    assert safe_name(".bashrc") == "bashrc"
    assert safe_name("..") == "documento"
    assert safe_name("a$b|c.txt") == "a_b_c.txt"
    long = safe_name("x" * 300 + ".csv")
    assert len(long) == 100 and long.endswith(".csv")


class Workspace:
    """Stands in for the sandbox: records what would be written, or fails like it."""

    def __init__(self, failure: SaveFailed | None = None) -> None:
        self.saved: list[tuple[str, str, str, bytes]] = []
        self.failure = failure

    async def save(self, chat_id: str, directory: str, name: str, data: bytes) -> str:
        if self.failure is not None:
            raise self.failure
        self.saved.append((chat_id, directory, name, data))
        return f"/workspace/{directory}/{name}"


async def test_saved_document_is_announced_with_its_path() -> None:
    workspace = Workspace()
    service = DocumentService(workspace.save, lambda: True, DocumentSettings())
    text = await service.read("7", Attachment("../gastos.csv", b"a,b\n", "text/csv"), "suma")
    assert workspace.saved == [("7", "archivos", "gastos.csv", b"a,b\n")]
    assert text == msg.DOCUMENT_ORIGIN.format(
        name="gastos.csv", size="4 B", path="/workspace/archivos/gastos.csv") + "\nsuma"


@pytest.mark.parametrize(("failure", "expected"), [
    (SaveFailed("engine down", unavailable=True),
     msg.DOCUMENT_NO_SANDBOX.format(name="a.txt", reason=msg.DOCUMENT_SANDBOX_DOWN)),
    (SaveFailed("workspace quota exceeded."),
     msg.DOCUMENT_SAVE_FAILED.format(name="a.txt", reason=msg.DOCUMENT_WORKSPACE_FULL)),
])
async def test_not_saved_is_said_plainly(failure: SaveFailed, expected: str) -> None:
    service = DocumentService(Workspace(failure).save, lambda: True, DocumentSettings())
    with pytest.raises(InputRefused) as refused:
        await service.read("7", Attachment("a.txt", b"hola"), "")
    assert str(refused.value) == expected


async def test_limits_and_switches_come_before_saving() -> None:
    workspace = Workspace()
    small = DocumentService(workspace.save, lambda: True, DocumentSettings(max_file_mb=0.001))
    with pytest.raises(InputRefused, match="demasiado grande"):
        await small.read("7", Attachment("a.txt", b"x" * 2_000), "")
    down = DocumentService(workspace.save, lambda: False, DocumentSettings())
    with pytest.raises(InputRefused) as refused:
        await down.read("7", Attachment("a.txt", b"x"), "")
    assert msg.DOCUMENT_SANDBOX_DOWN in str(refused.value)
    off = DocumentService(workspace.save, lambda: True, DocumentSettings(enabled=False))
    with pytest.raises(InputRefused) as refused:
        await off.read("7", Attachment("a.txt", b"x"), "")
    assert str(refused.value) == msg.DOCUMENTS_DISABLED.format(name="a.txt")
    assert workspace.saved == []
