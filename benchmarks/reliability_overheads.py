"""What issue 32's guarantees cost on every message: the room check before each turn (statvfs,
and a 64 KiB file written and removed in the data dir only when it is nearly full), masking
secrets in one log line, and parsing a getUpdates answer update by update instead of all at
once.

    python benchmarks/reliability_overheads.py --runs 2000 --dir ~/.rumi

`room_probe` is the write alone (what every turn paid before the statvfs check), `room_check`
what a turn pays on a disk that is not nearly full. `--dir` is where the probe writes (the
data dir's filesystem: an SD card, a tmpfs…). One JSON
object: p50/p95 in microseconds for each, and the batch parse beside plain `json.loads` and
beside PTB's own `Update.de_list` of the same batch (which runs after it either way).
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import tempfile
import time
from pathlib import Path

from _cli import positive
from telegram import Update

from rumi.channels.disk_room import DiskRoom
from rumi.channels.unparsed import UpdatesRequest
from rumi.cli.logs import LOG_FORMAT, MaskingFormatter
from rumi.fileio import has_room
from rumi.secret_mask import SecretMask

TOKEN = "123456789:AAHk3xJ9mLqW2vPz8YtR4nBcD6eFgH1iJ0k"
KEY = "gsk_" + "a1B2" * 12


def timed(fn, runs: int) -> dict[str, float]:  # noqa: ANN001
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - started) * 1e6)
    samples.sort()
    return {"p50_us": round(statistics.median(samples), 1),
            "p95_us": round(samples[int(len(samples) * 0.95) - 1], 1)}


def batch(updates: int) -> bytes:
    result = [{"update_id": n, "message": {
        "message_id": n, "date": 1_700_000_000, "text": "hola " * 40,
        "chat": {"id": 111, "type": "private", "first_name": "Ana"},
        "from": {"id": 111, "is_bot": False, "first_name": "Ana", "language_code": "es"},
        "entities": [{"type": "bold", "offset": 0, "length": 4}]}} for n in range(updates)]
    return json.dumps({"ok": True, "result": result}).encode()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=positive, default=2000)
    parser.add_argument("--dir", type=Path, default=None)
    args = parser.parse_args()
    folder = args.dir.expanduser() if args.dir else Path(tempfile.mkdtemp(prefix="rumi-bench-"))
    formatter = MaskingFormatter(logging.Formatter(LOG_FORMAT), SecretMask([TOKEN, KEY]))
    plain = logging.Formatter(LOG_FORMAT)
    record = logging.LogRecord("httpx", logging.INFO, __file__, 1,
                               'HTTP Request: POST http://127.0.0.1:8081/bot%s/getUpdates '
                               '"HTTP/1.1 200 OK"', (TOKEN,), None)
    request = UpdatesRequest()
    one, hundred = batch(1), batch(100)
    out = {
        "runs": args.runs,
        "probe_dir": str(folder),
        "room_probe": timed(lambda: has_room(folder), args.runs),
        "room_check": timed(DiskRoom(folder).check, args.runs),
        "log_line_plain": timed(lambda: plain.format(record), args.runs),
        "log_line_masked": timed(lambda: formatter.format(record), args.runs),
        "get_updates_1_json_loads": timed(lambda: json.loads(one), args.runs),
        "get_updates_1_per_update": timed(lambda: request.parse_json_payload(one), args.runs),
        "get_updates_100_json_loads": timed(lambda: json.loads(hundred), args.runs // 10 or 1),
        "get_updates_100_per_update": timed(lambda: request.parse_json_payload(hundred),
                                            args.runs // 10 or 1),
        # what PTB itself spends on the same batch afterwards, for scale
        "get_updates_100_ptb_de_list": timed(
            lambda: Update.de_list(json.loads(hundred)["result"], None), args.runs // 10 or 1),
    }
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
