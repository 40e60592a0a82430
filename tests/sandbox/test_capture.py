"""Output capture pieces that need no engine: the capped buffer and the frame demultiplexer."""

from __future__ import annotations

import socket
import time

from rumi.sandbox.exec import CappedBuffer, pump, wrap_command


def test_capped_buffer_keeps_head_and_tail():
    buffer = CappedBuffer(90)
    for i in range(1000):
        buffer.feed(f"{i:04d}\n".encode())
    text = buffer.text()
    assert text.startswith("0000\n0001\n")
    assert text.endswith("0998\n0999\n")
    assert buffer.truncated and buffer.dropped == 5000 - 90
    assert f"[output truncated: {5000 - 90} bytes omitted]" in text


def test_capped_buffer_small_output_is_untouched_and_bad_bytes_replaced():
    buffer = CappedBuffer(100)
    buffer.feed(b"caf\xc3\xa9 \xff!")
    assert (buffer.text(), buffer.truncated) == ("café \ufffd!", False)


def _frame(stream: int, payload: bytes) -> bytes:
    return bytes([stream, 0, 0, 0]) + len(payload).to_bytes(4, "big") + payload


def test_pump_demultiplexes_split_frames_until_eof():
    left, right = socket.socketpair()
    data = _frame(1, b"out-1 ") + _frame(2, b"err") + _frame(1, b"out-2")
    with left, right:
        for i in range(0, len(data), 5):  # frames arrive cut at arbitrary places
            right.sendall(data[i:i + 5])
        right.shutdown(socket.SHUT_WR)
        out, err = CappedBuffer(100), CappedBuffer(100)
        assert pump(left, time.monotonic() + 10, out, err) is True
    assert (out.text(), err.text()) == ("out-1 out-2", "err")


def test_pump_returns_false_at_the_deadline():
    left, right = socket.socketpair()
    with left, right:
        right.sendall(_frame(1, b"partial"))
        out, err = CappedBuffer(100), CappedBuffer(100)
        assert pump(left, time.monotonic() + 0.2, out, err) is False
    assert out.text() == "partial"


def test_wrap_command_passes_the_command_as_one_argument():
    argv = wrap_command("echo 'a b' | wc -c; exit 3", 2.5)
    assert argv[:2] == ["sh", "-c"]
    assert argv[-2:] == ["3", "echo 'a b' | wc -c; exit 3"]
