"""Run a blocking function in a daemon thread and await its result.

`asyncio.to_thread` uses the loop's default executor, whose threads `asyncio.run` joins when
the loop closes: a slow start-up load (the recall word lists take seconds to stem) would
then hold up the bot's stop by as long. A daemon thread is left behind instead; its result,
if it comes after the loop has closed, is dropped.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def _settle(future: asyncio.Future[T], result: T | None, error: BaseException | None) -> None:
    if future.done():
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)  # type: ignore[arg-type]


def in_daemon_thread(function: Callable[[], T], name: str) -> asyncio.Future[T]:
    """A future of `function()`, run in a daemon thread called `name` (call from the loop)."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()

    def run() -> None:
        result: T | None = None
        error: BaseException | None = None
        try:
            result = function()
        except BaseException as exc:  # noqa: BLE001 - handed to whoever awaits the future
            error = exc
        with contextlib.suppress(RuntimeError):  # the loop has closed: nobody is waiting
            loop.call_soon_threadsafe(_settle, future, result, error)

    threading.Thread(target=run, name=name, daemon=True).start()
    return future
