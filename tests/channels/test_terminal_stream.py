"""`rumi chat` prints the answer as the model writes it, on the real core and fake Groq."""

from __future__ import annotations

import io

from rumi import messages as msg
from rumi.app import build_app
from rumi.channels.terminal import TerminalChannel
from rumi.channels.thinking import ERASE_LINE
from tests.fakes.groq_server import FakeGroqServer

CONFIG = ('model = "fake"\n[sandbox]\nenabled = false\n[memory]\nembeddings_enabled = false\n')
ANSWER = "Una respuesta que llega a trozos, dieciséis caracteres cada vez, hasta el final."


class Writes(io.StringIO):
    """stdout that keeps each write apart, to see the answer arrive in pieces."""

    def __init__(self) -> None:
        super().__init__()
        self.writes: list[str] = []

    def write(self, text: str) -> int:
        self.writes.append(text)
        return super().write(text)


async def chat(make_settings, fake_groq: FakeGroqServer, lines: str, **options: object
               ) -> Writes:
    settings = make_settings(f'[llm]\napi_key = "k"\nbase_url = "{fake_groq.base_url}"\n'
                             + CONFIG)
    app = await build_app(settings)
    await app.start()
    out = Writes()
    try:
        await TerminalChannel(app.assistant, stdin=io.StringIO(lines), stdout=out,
                              steps=app.steps, answer_text=app.answer_text,
                              **options).run()  # type: ignore[arg-type]
    finally:
        await app.stop()
    return out


async def test_the_answer_prints_in_pieces_and_once(make_settings, fake_groq) -> None:
    fake_groq.stream_delay = 0.02
    fake_groq.enqueue_text(ANSWER)
    out = await chat(make_settings, fake_groq, "hola\n/salir\n")
    text = out.getvalue()
    assert text.count(ANSWER) == 1 and f"rumi> {ANSWER}\n" in text
    pieces = [w for w in out.writes if w and w in ANSWER]
    assert len(pieces) >= len(ANSWER) // 16
    assert fake_groq.requests[0]["stream"] is True


async def test_the_indicator_goes_at_the_first_words_and_returns_for_a_tool_step(
        make_settings, fake_groq) -> None:
    fake_groq.enqueue_tool_calls([("search_memory", {"query": "gatos"}, None)])
    fake_groq.enqueue_text(ANSWER)
    out = await chat(make_settings, fake_groq, "busca\n/salir\n", indicator=True)
    text = out.getvalue()
    answer = text.index(f"rumi> {ANSWER}")
    assert text[:answer].endswith(ERASE_LINE)   # erased right before the first words
    assert msg.TERMINAL_THINKING in text[:answer]
    assert msg.TERMINAL_THINKING not in text[answer:]
    assert text.index("🔧 `search_memory gatos`") < answer


async def test_what_the_turn_adds_after_the_stream_is_printed_not_the_whole_again(
        make_settings, fake_groq) -> None:
    fake_groq.enqueue_text("Una respuesta cortada", finish_reason="length")
    fake_groq.enqueue_text("Otra vez cortada", finish_reason="length")
    out = await chat(make_settings, fake_groq, "hola\n/salir\n")
    text = out.getvalue()
    assert text.count("Otra vez cortada") == 1
    assert f"Otra vez cortada\n\n{msg.REPLY_CUT}\n" in text
