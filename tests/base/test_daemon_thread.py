"""A start-up load in a daemon thread: its result reaches the loop, and the loop's end does
not wait for it."""

from __future__ import annotations

import asyncio
import threading

import pytest

from rumi.base.daemon_thread import in_daemon_thread


def test_the_result_and_the_error_reach_whoever_awaits() -> None:
    async def main() -> tuple[int, str]:
        value = await in_daemon_thread(lambda: 6 * 7, "t-result")

        def fail() -> int:
            raise ValueError("bad list")

        with pytest.raises(ValueError, match="bad list") as caught:
            await in_daemon_thread(fail, "t-error")
        return value, str(caught.value)

    assert asyncio.run(main()) == (42, "bad list")


def test_the_end_of_the_loop_does_not_wait_for_a_load_still_running() -> None:
    """The load blocks until released; asyncio.run returns while it still runs (with the
    default executor it would be joined: asyncio.run would return only after the 30 s)."""
    release = threading.Event()
    started = threading.Event()
    seen: list[threading.Thread] = []

    def slow_load() -> str:
        seen.append(threading.current_thread())
        started.set()
        release.wait(timeout=30)
        return "loaded"

    async def main() -> None:
        in_daemon_thread(slow_load, "t-slow")
        await asyncio.to_thread(started.wait, 10)

    asyncio.run(main())
    try:
        assert seen and seen[0].is_alive() and seen[0].daemon
        assert seen[0].name == "t-slow"
    finally:
        release.set()
    seen[0].join(timeout=10)
    assert not seen[0].is_alive()  # it finished after the loop had closed, without an error
