"""`rumi chat`: the terminal channel on the real core, in-process and as a subprocess."""

from __future__ import annotations

import asyncio
import io
import sys

from rumi.app import build_app
from rumi.channels.terminal import TerminalChannel
from tests.prompt_shape import person


async def test_terminal_conversation_keeps_history(make_settings, fake_groq, data_dir) -> None:
    settings = make_settings(f'[llm]\napi_key = "k"\nbase_url = "{fake_groq.base_url}"\n'
                             "[sandbox]\nenabled = false\n")
    fake_groq.enqueue_text("Hola, Ana.")
    fake_groq.enqueue_text("Te llamas Ana.")
    app = await build_app(settings)
    await app.start()
    try:
        out = io.StringIO()
        channel = TerminalChannel(app.assistant, stdin=io.StringIO(
            "me llamo Ana\n\n¿cómo me llamo?\n/salir\nnunca leído\n"), stdout=out)
        await channel.run()
    finally:
        await app.stop()
    text = out.getvalue()
    assert "rumi> Hola, Ana." in text and "rumi> Te llamas Ana." in text
    chat_requests = [r for r in fake_groq.requests if "response_format" not in r]
    assert "¡Hasta luego!" in text and len(chat_requests) == 2
    history = [m["content"] for m in chat_requests[1]["messages"] if m["role"] == "user"]
    assert any("me llamo Ana" in h for h in history)
    assert (data_dir / "chats" / "terminal" / "session.json").exists()


async def test_rumi_chat_subprocess_ends_cleanly_on_eof(tmp_path, fake_groq) -> None:
    fake_groq.enqueue_text("respuesta del proceso")
    config = tmp_path / "config.toml"
    config.write_text(f'data_dir = "{tmp_path / "data"}"\n[llm]\napi_key = "k"\n'
                      f'base_url = "{fake_groq.base_url}"\n[sandbox]\nenabled = false\n',
                      encoding="utf-8")
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", "import sys; from rumi.cli import main; sys.exit(main())",
        "chat", "--config", str(config),
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE)
    try:
        stdout, stderr = await asyncio.wait_for(proc.communicate(b"hola\n"), 60)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert proc.returncode == 0, stderr.decode()
    assert "rumi> respuesta del proceso" in stdout.decode()
    assert b"Traceback" not in stderr
    assert (tmp_path / "data" / "chats" / "terminal" / "session.json").exists()


async def test_terminal_export_writes_a_file_and_import_reads_one(make_settings, fake_groq,
                                                                    data_dir, tmp_path) -> None:
    """/export saves the archive under exports_dir; /import <path> brings it into a chat."""
    from rumi.memory.archive.safety import validate_archive

    settings = make_settings(f'[llm]\napi_key = "k"\nbase_url = "{fake_groq.base_url}"\n'
                             "[sandbox]\nenabled = false\n[memory]\nembeddings_enabled = false\n")
    exports = tmp_path / "exports"
    app = await build_app(settings)
    await app.start()
    try:
        out = io.StringIO()
        await TerminalChannel(app.assistant, exports_dir=exports, stdin=io.StringIO(
            "/remember ciudad: Vive en Cusco\n/export\n"), stdout=out).run()
        [archive] = list(exports.glob("rumi-terminal-*.tar.gz"))
        assert f"Archivo guardado en {archive}" in out.getvalue()
        size = f"{archive.stat().st_size:,}".replace(",", ".")   # "12.345 bytes" (issue 33)
        assert f"Archivo guardado en {archive} ({size} bytes)" in out.getvalue()
        assert "disponible en Telegram" not in out.getvalue()
        assert any("Vive en Cusco" in line for line in validate_archive(
            archive.read_bytes()).memories)
        out = io.StringIO()
        await TerminalChannel(app.assistant, chat_id="otra", exports_dir=exports,
                              stdin=io.StringIO(f'/import "{archive}"\n'), stdout=out).run()
        assert "Importado: 1 recuerdos nuevos" in out.getvalue()
        store = app.parts["memory_store"]
        assert [m.content for m in await store.list("otra")] == ["Vive en Cusco"]
    finally:
        await app.stop()


async def test_terminal_import_bad_input_is_a_friendly_message(make_settings, fake_groq,
                                                              tmp_path) -> None:
    settings = make_settings(f'[llm]\napi_key = "k"\nbase_url = "{fake_groq.base_url}"\n'
                             "[sandbox]\nenabled = false\n[memory]\nembeddings_enabled = false\n")
    junk = tmp_path / "junk.tar.gz"
    junk.write_bytes(b"not an archive")
    big = tmp_path / "big.tar.gz"
    big.write_bytes(b"x" * 2048)
    app = await build_app(settings)
    await app.start()
    try:
        out = io.StringIO()
        lines = ["/import", f"/import {tmp_path / 'nope.tar.gz'}", f"/import {tmp_path}",
                 f"/import {junk}", f"/import {big}"]
        await TerminalChannel(app.assistant, exports_dir=tmp_path, max_import_bytes=1024,
                              stdin=io.StringIO("\n".join(lines) + "\n"), stdout=out).run()
    finally:
        await app.stop()
    text = out.getvalue()
    assert "Uso en la terminal: /import <ruta" in text
    assert "No encuentro el archivo" in text and "no es un archivo." in text
    assert "No importé el archivo: no es un archivo .tar.gz válido" in text
    assert "demasiado grande" in text and text.count("No se cambió nada") == 4
    assert "Traceback" not in text and fake_groq.requests == []


async def test_a_memory_md_problem_found_at_start_is_asked_in_the_terminal(
        make_settings, fake_groq, data_dir) -> None:
    """Emptied while Rumi was stopped: the start-up catch-up holds the edit before any channel
    exists; the question is shown once the terminal is up and «n» answers it."""
    settings = make_settings(f'[llm]\napi_key = "k"\nbase_url = "{fake_groq.base_url}"\n'
                             "[sandbox]\nenabled = false\n[memory]\nembeddings_enabled = false\n")
    app = await build_app(settings)
    await app.start()
    try:
        for n in range(3):
            await app.assistant.handle("terminal", "local", f"/remember Recuerdo {n}")
    finally:
        await app.stop()
    md = data_dir / "chats" / "terminal" / "memory" / "MEMORY.md"
    md.write_text("", encoding="utf-8")
    app = await build_app(settings)
    await app.start()
    try:
        out = io.StringIO()
        channel = TerminalChannel(app.assistant, stdin=io.StringIO("n\n/salir\n"), stdout=out)
        await channel.run()
        store = app.parts["memory_store"]
        assert len(await store.list("terminal")) == 3
    finally:
        await app.stop()
    text = out.getvalue()
    assert "[aviso]" in text and "olvidaría 3 de 3" in text and "(o responde s/n)" in text
    assert "No olvido nada" in text
    assert md.read_text(encoding="utf-8").count("Recuerdo") == 3


async def test_terminal_audio_is_a_voice_note(make_settings, fake_groq, data_dir,
                                              tmp_path) -> None:
    settings = make_settings(f'[llm]\napi_key = "k"\nbase_url = "{fake_groq.base_url}"\n'
                             "[sandbox]\nenabled = false\n[memory]\nembeddings_enabled = false\n")
    note = tmp_path / "nota.ogg"
    note.write_bytes(b"OggS" + b"\x00" * 64)
    fake_groq.audio.enqueue("¿qué hora es en Lima?", duration=2.0)
    fake_groq.enqueue_text("Depende de tu zona, pero te lo calculo.")
    app = await build_app(settings)
    await app.start()
    try:
        out = io.StringIO()
        await TerminalChannel(app.assistant, stdin=io.StringIO(
            f"/audio\n/audio {tmp_path / 'no-existe.ogg'}\n/audio {note}\n/salir\n"),
            stdout=out).run()
    finally:
        await app.stop()
    text = out.getvalue()
    assert "Uso en la terminal: /audio <ruta" in text and "No encuentro el archivo" in text
    assert "🎙️ «¿qué hora es en Lima?»" in text
    assert "rumi> Depende de tu zona, pero te lo calculo." in text
    assert [r["filename"] for r in fake_groq.audio.requests] == ["nota.ogg"]
    spoken = person(fake_groq.requests[0])
    assert "[nota de voz, 2 s, transcrita] ¿qué hora es en Lima?" in spoken["content"]


async def test_lines_typed_while_the_model_thinks_wait_their_turn(make_settings, fake_groq,
                                                                 data_dir) -> None:
    """Issue 33: on a terminal, lines are read while a turn runs (so Ctrl-D and /exit are
    heard at once); any other line typed meanwhile is answered after it, in order."""
    import os

    settings = make_settings(f'[llm]\napi_key = "k"\nbase_url = "{fake_groq.base_url}"\n'
                             "[sandbox]\nenabled = false\n[memory]\nembeddings_enabled = false\n")
    fake_groq.enqueue_text("primera respuesta", delay=3.0)
    fake_groq.enqueue_text("segunda respuesta")
    app = await build_app(settings)
    await app.start()
    terminal, typed = os.openpty()[::-1]
    stdin = os.fdopen(terminal, "r", encoding="utf-8")
    try:
        out = io.StringIO()
        channel = TerminalChannel(app.assistant, stdin=stdin, stdout=out)
        assert channel.interactive
        run = asyncio.create_task(channel.run())
        os.write(typed, b"uno\n")
        while not [r for r in fake_groq.requests if "response_format" not in r]:
            await asyncio.sleep(0.02)
        os.write(typed, b"dos\n")     # typed while the model thinks about "uno"
        for _ in range(1200):
            if "segunda respuesta" in out.getvalue() or run.done():
                break
            await asyncio.sleep(0.05)
        assert not run.done(), (out.getvalue(), run)
        os.write(typed, b"/salir\n")
        await asyncio.wait_for(run, 60)
    finally:
        os.close(typed)        # the reader thread sees the terminal go away, then stops
        await app.stop()
        if run.done():
            stdin.close()      # closing it under a blocked reader would wait for that read
    text = out.getvalue()
    assert text.index("primera respuesta") < text.index("segunda respuesta")
    users = [m["content"] for m in fake_groq.last_messages() if m["role"] == "user"]
    assert any("uno" in u for u in users) and any("dos" in u for u in users)
