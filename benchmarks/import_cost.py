"""What importing Rumi and loading its tokenizer cost at every start, in fresh interpreters.

    python benchmarks/import_cost.py                    # 5 runs of each target
    python benchmarks/import_cost.py --runs 9 --roots 15

A restarted bot (`rumi run`, after a crash or an upgrade) imports `rumi.cli.bot` (which pulls
`rumi.app` and every feature) and then `rumi.channels.telegram`, before `setup_logging` has
run. Each target is imported `--runs` times in a new `python` process (this checkout's `rumi`
first on the path); the child times the import itself (wall and CPU: CPU is the figure to
compare on a loaded machine) and counts the modules it loaded, the parent times the whole
process. Medians are reported, with the load beside them. `--roots N` adds, from one more run
under `-X importtime`, the N third-party packages that cost most where a `rumi` module first
imports them (the candidates for importing later). The last target times the tokenizer
`build_app` loads next (tiktoken's o200k_base: its vocabulary file parsed and its BPE built,
at every start; `TIKTOKEN_CACHE_DIR` must hold the file). Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections import Counter

from _cli import REPO, positive

TARGETS = {
    "rumi.app": "import rumi.app",
    "rumi.cli": "import rumi.cli",
    "bot start (rumi.cli.bot + rumi.channels.telegram)":
        "import rumi.cli.bot, rumi.channels.telegram",
}
# (set-up, untimed; what is timed): the tokenizer `build_app` loads, after the imports it
# comes after in the bot; tiktoken parses its vocabulary file and builds its BPE every start
TOKENIZER = {"tokenizer (o200k_base)": ("import tiktoken, rumi.context.tokens",
                                        "tiktoken.get_encoding('o200k_base')")}

CHILD = """
import json, sys, time
{setup}
wall, cpu = time.perf_counter(), time.process_time()
{statement}
wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
names = list(sys.modules)
rumi = sys.modules.get("rumi")
print(json.dumps({{"wall_ms": wall * 1000, "cpu_ms": cpu * 1000, "modules": len(names),
                  "rumi_modules": sum(1 for n in names if n == "rumi" or n.startswith("rumi.")),
                  "rumi_path": getattr(rumi, "__file__", None)}}))
"""


def env() -> dict[str, str]:
    """This checkout's `rumi` first, whatever the venv's editable install points at (and
    the children run in this checkout: `python -c` puts the working directory first)."""
    path = os.environ.get("PYTHONPATH")
    return {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{path}" if path else str(REPO)}


def measure(statement: str, runs: int, setup: str = "") -> dict[str, object]:
    samples: list[dict[str, float]] = []
    process: list[float] = []
    for _ in range(runs):
        started = time.perf_counter()
        child = CHILD.format(setup=setup, statement=statement)
        done = subprocess.run([sys.executable, "-c", child],
                              capture_output=True, text=True, check=True, env=env(), cwd=REPO)
        process.append((time.perf_counter() - started) * 1000)
        samples.append(json.loads(done.stdout))
    return {"import_wall_ms": round(statistics.median(s["wall_ms"] for s in samples), 1),
            "import_cpu_ms": round(statistics.median(s["cpu_ms"] for s in samples), 1),
            "process_wall_ms": round(statistics.median(process), 1),
            "import_wall_ms_all": [round(s["wall_ms"]) for s in samples],
            "modules": int(samples[-1]["modules"]),
            "rumi_modules": int(samples[-1]["rumi_modules"]),
            "rumi_path": samples[-1]["rumi_path"],
            "load_avg_1m": round(os.getloadavg()[0], 2)}


def roots(statement: str, top: int) -> list[dict[str, object]]:
    """The third-party packages a `rumi` module imports first, by their cumulative time (µs
    → ms) in one `-X importtime` run: what importing later would take off the start."""
    done = subprocess.run([sys.executable, "-X", "importtime", "-c", statement],
                          capture_output=True, text=True, check=True, env=env(), cwd=REPO)
    rows = []
    for line in done.stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        _, cumulative, name = line.split(":", 1)[1].split("|")
        rows.append(((len(name) - len(name.lstrip())) // 2, name.strip(), int(cumulative)))
    found: Counter[str] = Counter()
    for i, (depth, name, cumulative) in enumerate(rows):   # a parent is printed after its children
        parent = next((n for d, n, _ in rows[i + 1:] if d == depth - 1), "")
        if not name.startswith("rumi") and parent.startswith("rumi"):
            found[f"{name.split('.')[0]} <- {parent}"] += cumulative
    return [{"package": key, "ms": round(us / 1000, 1)} for key, us in found.most_common(top)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=positive, default=5)
    parser.add_argument("--roots", type=int, default=0, help="list the N costliest packages")
    parser.add_argument("--no-tokenizer", action="store_true", help="imports only")
    args = parser.parse_args()
    result: dict[str, object] = {"runs": args.runs, "python": sys.version.split()[0],
                                 "cpus": os.cpu_count()}
    for name, statement in TARGETS.items():
        result[name] = measure(statement, args.runs)
        if args.roots:
            result[name]["roots"] = roots(statement, args.roots)   # type: ignore[index]
    if not args.no_tokenizer:
        for name, (setup, load) in TOKENIZER.items():
            result[name] = measure(load, args.runs, setup)
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
