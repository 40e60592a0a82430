"""kill -9 in the middle of turns that run non-idempotent shell commands in the real sandbox:
after each restart every command has run at most once and every message is answered once.

The issue's repro, repeated: `echo pago-N >> /workspace/pagos.txt` through the shell tool of
a real `rumi run` (fake Groq, fake Bot API, the real rumi-sandbox:test container). Each round
sends one message and kills the bot at one of three moments — before the tool (the model is
still choosing the call), during the tool (the command sleeps after writing its line), after
the tool result (the model is still writing the answer) — then restarts it and waits for the
answer. The restarted bot, once it has answered and journaled that, is the one the next round
sends to and kills: 21 kills at the same reached states with 22 starts instead of 42 (and a
bot that has itself recovered a turn is killed again, as in life). On 0.6.0 the restarted
bot re-ran the whole turn, so the "after" rounds wrote their line twice."""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import sys
import time
import uuid
from collections import Counter
from pathlib import Path

import pytest

import docker
from rumi import messages as msg
from rumi.sandbox import loopvolume
from tests.conftest import SANDBOX_TEST_IMAGE
from tests.e2e.conftest import ALICE, TOKEN
from tests.fakes.chat_model import latest_user_text, pending_tool_results
from tests.fakes.docker_relay import docker_socket_path
from tests.fakes.groq_server import ScriptedReply
from tests.memory.files.test_markdown_sync import eventually

pytestmark = [pytest.mark.e2e, pytest.mark.docker]

ROUNDS = 21
MOMENTS = ("before", "during", "after")
NOT_RUN = "Not executed: Rumi restarted before"


class Model:
    """A chat model that pays: "pago N" → the shell tool appends `pago-N` to pagos.txt; after
    the result it answers "respuesta a pago N". A call reported as not run is made again;
    one reported as possibly run is not repeated (the model is told to check first). While
    `slow` is set, its replies take `delay` seconds (the bot is killed meanwhile); while
    `hold` is set, the command sleeps 30 s after writing its line, so a kill while it runs
    is never late."""

    def __init__(self) -> None:
        self.slow = False
        self.hold = False
        self.delay = 1.5
        self.calls: Counter[str] = Counter()    # by stage "N:call" / "N:answer"
        self.served_at: dict[str, float] = {}

    def __call__(self, body: dict) -> ScriptedReply:  # type: ignore[type-arg]
        if "response_format" in body:          # memory extraction: nothing to keep
            return ScriptedReply({"role": "assistant", "content": '{"memories": []}'})
        asked = re.findall(r"pago (\d+)", latest_user_text(body))
        n = asked[-1] if asked else "?"
        results = pending_tool_results(body)
        if not results or NOT_RUN in str(results[-1].get("content")):
            stage = f"{n}:call"
            message = {"role": "assistant", "content": None, "tool_calls": [{
                "id": f"call_{n}_{uuid.uuid4().hex[:8]}", "type": "function",
                "function": {"name": "bash", "arguments": json.dumps({"command": (
                    f"echo pago-{n} >> /workspace/pagos.txt; sleep {30 if self.hold else 0}; "
                    "echo hecho")})}}]}
        else:
            stage = f"{n}:answer"
            message = {"role": "assistant", "content": f"respuesta a pago {n}"}
        self.calls[stage] += 1
        self.served_at[stage] = time.monotonic()
        return ScriptedReply(message, delay=self.delay if self.slow else 0.0)


def _config(tmp_path: Path, fake_groq, fake_telegram) -> Path:  # noqa: ANN001
    config = tmp_path / "config.toml"
    config.write_text(
        f'data_dir = "{tmp_path / "data"}"\n'
        f'[telegram]\ntoken = "{TOKEN}"\nbase_url = "{fake_telegram.base_url}"\n'
        f'base_file_url = "{fake_telegram.base_file_url}"\nallowed_users = [{ALICE}]\n'
        "poll_timeout = 1\nredeliver_max_age_minutes = 30\n"
        f'[llm]\napi_key = "gsk_test"\nbase_url = "{fake_groq.base_url}"\nmax_retries = 0\n'
        f'[sandbox]\nenabled = true\nimage = "{SANDBOX_TEST_IMAGE}"\n'
        "[memory]\nembeddings_enabled = false\n",
        encoding="utf-8")
    return config


async def _start(config: Path):  # noqa: ANN202
    return await asyncio.create_subprocess_exec(
        sys.executable, "-c", "import sys; from rumi.cli import main; sys.exit(main())",
        "run", "--config", str(config),
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL)


def _answers(fake_telegram) -> Counter[str]:  # noqa: ANN001
    found = (re.search(r"respuesta a pago (\d+)", s.text or "") for s in fake_telegram.sent)
    return Counter(m.group(1) for m in found if m)


async def _kill_at(moment: str, n: int, model: Model, tape: Path) -> None:
    """Wait for the round's moment, each a state the bot has reached, never a guess of time:
    the model is asked for the call and is slow to reply (before); the tape marks the call
    started and the command sleeps 30 s (during); the model is asked for the answer after
    the result and is slow to reply (after)."""
    if moment == "before":
        await eventually(lambda: model.calls[f"{n}:call"] >= 1, timeout=60)
    elif moment == "during":
        await eventually(lambda: _started(tape, n), timeout=60)
    else:
        await eventually(lambda: model.calls[f"{n}:answer"] >= 1, timeout=60)


def _started(tape: Path, n: int) -> bool:
    """The tape holds round `n`'s call as started (the mark written just before it runs)."""
    if not tape.exists():
        return False
    return any(f'"call_{n}_' in line and '"tool_start"' in line
               for line in tape.read_text(encoding="utf-8").splitlines())


def _journal_settled(data_dir: Path) -> bool:
    """The inbox journal holds no message still open: every answer sent is journaled, so a
    kill now cannot be the one between Telegram accepting an answer and the bot hearing it
    (that moment has its own test in test_crash_redelivery.py)."""
    path = data_dir / "inbox" / "telegram.jsonl"
    return path.exists() and not any(
        '"op": "recv"' in line for line in path.read_text(encoding="utf-8").splitlines())


def _ledger(instance: str) -> Counter[str]:
    """pagos.txt as the chat's workspace volume holds it, read by a labelled throwaway
    container (the bot is down)."""
    client = docker.DockerClient(base_url=f"unix://{docker_socket_path()}")
    try:
        filters = {"label": ["rumi.managed=1", f"rumi.instance={instance}"]}
        volume = next(v for v in client.volumes.list(filters=filters)
                      if "rumi.role" not in (v.attrs.get("Labels") or {}))  # not its image store
        out = client.containers.run(
            SANDBOX_TEST_IMAGE, ["cat", "/w/pagos.txt"], remove=True, network_mode="none",
            volumes={volume.name: {"bind": "/w", "mode": "ro"}},
            labels={"rumi.test": f"crash-tool-steps-{instance}"})
        return Counter(out.decode().split())
    finally:
        client.close()


def _cleanup(instance: str) -> None:
    client = docker.DockerClient(base_url=f"unix://{docker_socket_path()}")
    try:
        filters = {"label": ["rumi.managed=1", f"rumi.instance={instance}"]}
        for container in client.containers.list(all=True, filters=filters):
            container.remove(force=True)
        loopvolume.remove_volumes(client, SANDBOX_TEST_IMAGE,
                                  client.volumes.list(filters=filters))
    finally:
        client.close()


async def test_no_command_runs_twice_across_repeated_kills(
        tmp_path, fake_groq, fake_telegram, docker_engine) -> None:  # noqa: ANN001
    config = _config(tmp_path, fake_groq, fake_telegram)
    instance = hashlib.sha256(str((tmp_path / "data").resolve()).encode()).hexdigest()[:12]
    model = Model()
    fake_groq.responder = model
    data_dir = tmp_path / "data"
    tape = data_dir / "chats" / str(ALICE) / ".smma" / "session_log.jsonl"
    moments: dict[int, str] = {}
    try:
        proc = await _start(config)
        try:
            await fake_telegram.wait_for_call("getUpdates", timeout=60)
            for n in range(1, ROUNDS + 1):
                moment = moments[n] = MOMENTS[n % len(MOMENTS)]
                model.slow, model.hold = moment != "during", moment == "during"
                fake_telegram.push_text(ALICE, ALICE, f"pago {n}")
                await _kill_at(moment, n, model, tape)
                proc.kill()
                await proc.wait()
                model.slow = model.hold = False
                # the restarted bot recovers round n, then carries round n + 1 (it is the
                # next round's victim: every bot but the first was started after a kill)
                proc = await _start(config)
                await eventually(lambda n=n: _answers(fake_telegram)[str(n)] >= 1, timeout=90)
                await eventually(lambda: _journal_settled(data_dir), timeout=30)
        finally:
            proc.kill()
            await proc.wait()
        ledger = await asyncio.to_thread(_ledger, instance)
    finally:
        await asyncio.to_thread(_cleanup, instance)
    twice = {line: count for line, count in ledger.items() if count > 1}
    assert not twice, f"commands run more than once: {twice} (moments {moments})"
    answers = _answers(fake_telegram)
    assert all(answers[str(n)] == 1 for n in range(1, ROUNDS + 1)), (answers, moments)
    told = [s.text for s in fake_telegram.sent
            if (s.text or "").startswith(msg.TOOL_MAYBE_RAN_NOTICE[:12])]
    assert told, "no round was cut while its command ran"
