"""The agent loop streams the answer's text to whoever watches the turn, and only then."""

from __future__ import annotations

import asyncio
import contextlib

from rumi import messages as msg
from rumi.agent.turn import TurnResult
from rumi.base.answer_text import AnswerText
from rumi.sessions.state import SessionState
from tests.agent import test_agent_loop
from tests.fakes.groq_server import ScriptedReply
from tests.fakes.groq_stream import StreamFault

make_loop = test_agent_loop.make_loop   # the same rig: real client, fake Groq, real tools


class Watcher:
    def __init__(self) -> None:
        self.pieces: list[AnswerText] = []
        self.first = asyncio.Event()

    async def __call__(self, piece: AnswerText) -> None:
        self.pieces.append(piece)
        self.first.set()

    def shown(self) -> str:
        """What a display shows now: the text since the last restart."""
        text = ""
        for piece in self.pieces:
            text = piece.text if piece.restart else text + piece.text
        return text


async def test_a_watched_turn_streams_its_answer(make_loop, fake_groq) -> None:
    loop, _ = make_loop()
    answer = "Esta es una respuesta que el modelo escribe poco a poco."
    fake_groq.enqueue_text(answer)
    watcher = Watcher()
    with loop.text.watching(watcher):
        result = await loop.run(SessionState(chat_id="42"), "hola")
    assert result.text == answer
    assert fake_groq.requests[0]["stream"] is True
    assert watcher.shown() == answer and len(watcher.pieces) > 1
    assert watcher.pieces[0].restart and not any(p.restart for p in watcher.pieces[1:])
    assert {p.chat_id for p in watcher.pieces} == {"42"}


async def test_an_unwatched_turn_is_not_streamed(make_loop, fake_groq) -> None:
    loop, _ = make_loop()
    fake_groq.enqueue_text("entera")
    result = await loop.run(SessionState(chat_id="42"), "hola")
    assert result.text == "entera"
    assert "stream" not in fake_groq.requests[0]
    assert fake_groq.streams == []


async def test_a_tool_step_then_the_answer_restarts_the_display(make_loop, fake_groq) -> None:
    loop, context = make_loop()
    fake_groq.queue.append(ScriptedReply({"role": "assistant", "content": "Voy a mirar…",
                                          "tool_calls": [{"id": "c1", "type": "function",
                                                          "function": {"name": "echo",
                                                                       "arguments":
                                                                       '{"text": "hi"}'}}]}))
    fake_groq.enqueue_text("El eco dice HI.")
    watcher = Watcher()
    with loop.text.watching(watcher):
        result = await loop.run(SessionState(chat_id="42"), "haz eco")
    assert result.text == "El eco dice HI." == watcher.shown()
    assert [p.text for p in watcher.pieces if p.restart] == ["Voy a mirar…", "El eco dice HI."]
    assert result.tools == ["echo"]


async def test_a_broken_stream_is_answered_honestly(make_loop, fake_groq) -> None:
    loop, context = make_loop(llm_extra='model = "fake"\n')   # no reasoning chunks first
    text = "Primera parte de una respuesta que nunca termina de llegar."
    fake_groq.queue.append(ScriptedReply({"role": "assistant", "content": text},
                                         stream_fault=StreamFault(2)))
    with loop.text.watching(Watcher()):
        result = await loop.run(SessionState(chat_id="42"), "hola")
    assert result.stopped_by == "stream_broken"
    assert result.text == f"{text[:32].rstrip()}\n\n{msg.STREAM_CUT}"
    assert context.tape[-1][2:] == ("assistant", result.text)   # never the whole answer
    assert len(fake_groq.requests) == 1


async def test_an_answer_cut_by_length_and_retried_restarts_the_display(make_loop,
                                                                          fake_groq) -> None:
    loop, _ = make_loop()
    fake_groq.enqueue_text("Una respuesta cortada", finish_reason="length")
    fake_groq.enqueue_text("La respuesta entera.")
    watcher = Watcher()
    with loop.text.watching(watcher):
        result = await loop.run(SessionState(chat_id="42"), "hola")
    assert result.text == "La respuesta entera." == watcher.shown()


async def test_stopping_mid_stream_keeps_what_was_written(make_loop, fake_groq) -> None:
    loop, context = make_loop()
    fake_groq.stream_delay = 0.05
    fake_groq.enqueue_text("palabra " * 200)
    watcher = Watcher()
    result = TurnResult(text="")
    with loop.text.watching(watcher):
        task = asyncio.create_task(loop.run(SessionState(chat_id="42"), "hola", result=result))
    await watcher.first.wait()
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    assert result.stopped_by == "stopped"
    assert result.text.startswith(watcher.shown().rstrip())
    assert result.text.endswith(msg.STOPPED_MARK)
    assert context.tape[-1][2] == "user"   # the core records a stop (a shutdown: nothing)
    record = fake_groq.streams[0]
    for _ in range(100):
        if record.client_closed:
            break
        await asyncio.sleep(0.02)
    assert record.client_closed and not record.done
