"""The smoke that proves an installed Rumi works: `rumi doctor`, `rumi models verify` (the
embedding model loads and embeds), then `rumi chat` answering a message and recalling a fact
remembered a moment before, against the project's fake Groq and Telegram.

    python scripts/arm64_smoke.py [--root DIR] [--rumi PATH] [--shared DIR] [--machine NAME]

scripts/arm64_smoke.sh runs it with `--root` pointing at an arm64 Debian root (so every Rumi
process runs under qemu-user-static, as on a Raspberry Pi); without `--root` it checks the Rumi
found on this machine's PATH, which is how the test suite keeps this driver honest. The fake
server runs here, on 127.0.0.1 (a chroot shares the host's network); `--rumi` and `--shared` are
paths as seen inside the root. Prints one JSON line; exits 1 with the reason on the first failed
assertion.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import shlex
import shutil
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.fakes.chat_model import latest_user  # noqa: E402
from tests.fakes.groq_server import FakeGroqServer  # noqa: E402
from tests.fakes.telegram_server import FakeTelegramServer  # noqa: E402

MODEL_SUBDIR = "models/all-MiniLM-L6-v2-onnx"
STEP_TIMEOUT = 900.0  # generous: under emulation one start of Rumi takes tens of seconds
TELEGRAM_TOKEN = "4242:arm64-smoke"  # noqa: S105 - the fake Telegram's, nothing real
MUST_PASS = ("config", "groq", "telegram", "architecture", "data dir", "sqlite", "memory database",
             "tokenizer", "embedding model")
"""Doctor checks that must be OK inside the root. Docker, Telegram and the host-level checks
(cgroups, storage) describe the machine, not the install: they may warn, never FAIL."""


class SmokeFailure(Exception):
    """One sentence saying what did not hold."""


def _content_text(message: dict[str, Any]) -> str:
    content = message.get("content") or ""
    if isinstance(content, list):
        return " ".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return str(content)


class Recaller:
    """Answers like a model that read its prompt: it repeats the fact if the prompt holds it."""

    def __init__(self, fact: str) -> None:
        self.fact = fact

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        prompt = json.dumps(body.get("messages", []), ensure_ascii=False)
        if "response_format" in body:
            return {"role": "assistant", "content": "{}"}
        if "gata" not in _content_text(latest_user(body)).lower():
            return {"role": "assistant", "content": "SMOKE-HELLO"}
        if self.fact in prompt:
            return {"role": "assistant", "content": f"SMOKE-RECALL {self.fact}"}
        return {"role": "assistant", "content": "SMOKE-FORGOT"}


async def _run(argv: list[str], env: dict[str, str], stdin: bytes = b"") -> tuple[int, str, str]:
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv, env=env, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE)
    except OSError as exc:
        raise SmokeFailure(f"cannot start {argv[0]}: {exc.strerror}") from exc
    try:
        out, err = await asyncio.wait_for(proc.communicate(stdin), STEP_TIMEOUT)
    except TimeoutError as exc:
        raise SmokeFailure(f"rumi {argv[-3]} did not finish within {STEP_TIMEOUT:.0f} s") from exc
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    return proc.returncode or 0, out.decode(errors="replace"), err.decode(errors="replace")


def _check_doctor(code: int, out: str, err: str, machine: str) -> dict[str, str]:
    try:
        results = {r["name"]: r for r in json.loads(out)}
    except (ValueError, TypeError, KeyError) as exc:
        raise SmokeFailure(f"rumi doctor printed no JSON (exit {code}): {err[-400:]}") from exc
    failed = [f"{n}: {r['detail']}" for n, r in results.items() if r["status"] == "FAIL"]
    if code != 0 or failed:
        raise SmokeFailure(f"rumi doctor failed (exit {code}): {'; '.join(failed)}")
    not_ok = [f"{n}: {results[n]['status'] if n in results else 'missing'}"
              for n in MUST_PASS if results.get(n, {}).get("status") != "OK"]
    if not_ok:
        raise SmokeFailure(f"rumi doctor: expected OK for {', '.join(not_ok)}")
    if machine not in results["architecture"]["detail"]:
        raise SmokeFailure(f"rumi doctor ran on {results['architecture']['detail']!r}, "
                           f"not {machine}")
    return {n: r["status"] for n, r in results.items()}


def _check_embeddings(code: int, out: str, err: str) -> None:
    """onnxruntime really ran: the model loaded and embedded a test pair (doctor only looks
    for the files, and the chat may fall back to keyword recall while the model loads)."""
    if code != 0 or " OK: 384-d vectors" not in out:
        raise SmokeFailure(f"rumi models verify did not embed (exit {code}): "
                           f"{(err or out)[-400:]}")


def _check_chat(code: int, out: str, err: str, fact: str,
                requests: list[dict[str, Any]]) -> None:
    if code != 0 or "Traceback" in err:
        raise SmokeFailure(f"rumi chat exited {code}: {err[-600:]}")
    if "rumi> SMOKE-HELLO" not in out:
        raise SmokeFailure(f"rumi chat did not answer the first message: {out[-600:]}")
    if f"rumi> SMOKE-RECALL {fact}" not in out:
        raise SmokeFailure(f"rumi chat did not recall the remembered fact: {out[-600:]}")
    asked = [r for r in requests if "gata" in _content_text(latest_user(r)).lower()]
    carriers = [_content_text(m) for m in asked[-1]["messages"] if fact in _content_text(m)
                ] if asked else []
    if not carriers or any("/remember" in text for text in carriers):
        raise SmokeFailure("the remembered fact never reached the model's request from memory")


async def smoke(root: Path | None, rumi: list[str], shared: str, machine: str) -> dict[str, Any]:
    """Doctor, the embedding model, then a chat; returns the timings and doctor's verdicts."""
    host_root = root or Path("/")
    data = Path(tempfile.mkdtemp(prefix="rumi-smoke-", dir=host_root / "tmp"))
    inside = Path("/") / data.relative_to(host_root)
    chroot = shutil.which("chroot") or "/usr/sbin/chroot"  # the child's PATH lacks sbin
    prefix = [chroot, str(root)] if root else []
    fact = f"Quillka-{uuid.uuid4().hex[:8]}"
    fake = await FakeGroqServer().start()
    fake.responder = Recaller(fact)
    telegram = await FakeTelegramServer(TELEGRAM_TOKEN).start()
    try:
        config = data / "config.toml"
        config.write_text(
            f'data_dir = "{inside / "data"}"\n'
            f'[llm]\napi_key = "gsk_arm64_smoke"\nbase_url = "{fake.base_url}"\nmodel = "fake"\n'
            f'[telegram]\ntoken = "{TELEGRAM_TOKEN}"\nbase_url = "{telegram.base_url}"\n'
            "allowed_users = [1]\n[sandbox]\nenabled = false\n"
            f'[memory]\nembedding_model_path = "{shared}/{MODEL_SUBDIR}"\n'
            'embedding_model = "sentence-transformers/all-MiniLM-L6-v2"\n', encoding="utf-8")
        config.chmod(0o600)
        env = {"HOME": str(inside), "LANG": "C.UTF-8", "TIKTOKEN_CACHE_DIR": f"{shared}/tiktoken"}
        # inside a root nothing of this machine's environment applies; here it may (PYTHONPATH)
        env = {"PATH": "/usr/local/bin:/usr/bin:/bin", **env} if root else {**os.environ, **env}
        timings: dict[str, Any] = {}
        started = time.monotonic()
        code, out, err = await _run([*prefix, *rumi, "doctor", "--json", "--config",
                                     str(inside / "config.toml")], env)
        verdicts = _check_doctor(code, out, err, machine)
        timings["doctor_s"] = round(time.monotonic() - started, 1)
        started = time.monotonic()
        code, out, err = await _run([*prefix, *rumi, "models", "verify", "--config",
                                     str(inside / "config.toml")], env)
        _check_embeddings(code, out, err)
        timings["models_verify_s"] = round(time.monotonic() - started, 1)
        started = time.monotonic()
        script = (f"hola\n/remember mascota: Mi gata se llama {fact}\n"
                  "¿Cómo se llama mi gata?\n/salir\n")
        code, out, err = await _run([*prefix, *rumi, "chat", "--config",
                                     str(inside / "config.toml")], env, script.encode())
        _check_chat(code, out, err, fact, fake.requests)
        timings["chat_s"] = round(time.monotonic() - started, 1)
        return {"ok": True, **timings, "doctor": verdicts}
    finally:
        await telegram.stop()
        await fake.stop()
        shutil.rmtree(data, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, help="run Rumi inside this root (chroot)")
    parser.add_argument("--rumi", default="rumi",
                        help="the rumi command, split like a shell would (a path in the root)")
    parser.add_argument("--shared", default=os.environ.get("RUMI_SHARED_DIR", "/work/shared"),
                        help="the shared model and tiktoken directory (a path in the root)")
    parser.add_argument("--machine", default=platform.machine(),
                        help="the architecture doctor must report (e.g. aarch64)")
    args = parser.parse_args(argv)
    try:
        outcome = asyncio.run(smoke(args.root, shlex.split(args.rumi), args.shared, args.machine))
    except SmokeFailure as exc:
        print(f"arm64 smoke: FAIL: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(outcome))
    return 0


if __name__ == "__main__":
    sys.exit(main())
