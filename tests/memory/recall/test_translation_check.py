"""Whether Apertium is here is looked up off the event loop: the loop keeps answering while
the look-up waits on the disk, and questions that arrive meanwhile share one look-up."""

from __future__ import annotations

import asyncio
import logging
import shutil
import threading
from pathlib import Path
from typing import Any

import pytest

from rumi.memory.recall.machine_translation import MachineTranslator


async def test_the_apertium_check_runs_off_the_loop_once_for_concurrent_questions(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))   # nothing of Apertium on it: a known answer
    loop = asyncio.get_running_loop()
    entered = asyncio.Event()
    release = threading.Event()
    looked_up: list[str] = []
    waited: list[bool] = []
    real_which = shutil.which

    def slow_which(name: str, *args: Any, **kwargs: Any) -> str | None:
        """The real look-up, after a disk that answers only when the loop says so: run on
        the loop itself, it would wait its full 10 s (and `waited` would say False)."""
        if not looked_up:
            loop.call_soon_threadsafe(entered.set)
            waited.append(release.wait(timeout=10))
        looked_up.append(name)
        return real_which(name, *args, **kwargs)

    monkeypatch.setattr(shutil, "which", slow_which)
    mt = MachineTranslator()
    with caplog.at_level(logging.INFO, logger="rumi.memory.recall.machine_translation"):
        questions = [asyncio.ensure_future(mt.translate(q, "es", "en"))
                     for q in ("¿Dónde vive Jon?", "¿Qué come Jon?")]
        await asyncio.wait_for(entered.wait(), 10)
        assert not any(q.done() for q in questions)   # both wait for the one look-up
        release.set()
        assert await asyncio.gather(*questions) == [None, None]
    assert waited == [True]   # the loop ran while the look-up waited
    assert sorted(looked_up) == ["apertium-wblank-mode", "bash", "lt-proc"]   # once, not twice
    assert "not on PATH" in (await mt.check() or "")
    assert len(looked_up) == 3   # the answer is remembered
    assert len([r for r in caplog.records if "machine translation off" in r.message]) == 1
