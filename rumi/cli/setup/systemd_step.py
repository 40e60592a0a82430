"""Setup step (optional): a systemd *user* service that keeps `rumi run` going.

A user unit needs no root and runs as the person who owns the config and the data dir; with
"linger" enabled it starts at boot without a login. Setup writes the file and prints the
commands instead of running them: it must not need systemd to exist (containers, tests), and
enabling a service is a decision the person should see.
"""

from __future__ import annotations

import shlex
import shutil
import sys
from collections.abc import Mapping
from pathlib import Path

UNIT_NAME = "rumi.service"


def rumi_command() -> list[str]:
    """How to start this very installation of Rumi: the `rumi` beside this Python (its
    venv), else the one on PATH."""
    beside = Path(sys.executable).parent / "rumi"
    if beside.is_file():
        return [str(beside)]
    found = shutil.which("rumi")
    return [str(Path(found).resolve()) if found else "rumi"]


def unit_text(config: Path, data_dir: Path, env: Mapping[str, str],
              command: list[str] | None = None) -> str:
    command = command or rumi_command()
    exec_start = " ".join(shlex.quote(part) for part in
                          [*command, "run", "--config", str(config)])
    fastembed = env.get("FASTEMBED_CACHE_PATH") or str(data_dir / "cache" / "fastembed")
    tiktoken = env.get("TIKTOKEN_CACHE_DIR") or str(data_dir / "cache" / "tiktoken")
    return (
        "# Rumi as a systemd user service, written by `rumi setup --systemd`.\n"
        "#   systemctl --user daemon-reload && systemctl --user enable --now rumi\n"
        "#   journalctl --user -u rumi -f\n"
        "[Unit]\n"
        "Description=Rumi assistant (Telegram bot)\n"
        "Wants=network-online.target\n"
        "After=network-online.target\n"
        "\n"
        "[Service]\n"
        "Type=simple\n"
        "Environment=PYTHONUNBUFFERED=1\n"
        f"Environment=FASTEMBED_CACHE_PATH={fastembed}\n"
        f"Environment=TIKTOKEN_CACHE_DIR={tiktoken}\n"
        f"ExecStart={exec_start}\n"
        "Restart=on-failure\n"
        "RestartSec=10\n"
        "TimeoutStopSec=30\n"
        "UMask=0077\n"
        "\n"
        "[Install]\n"
        "WantedBy=default.target\n"
    )


def unit_path(home: Path) -> Path:
    return home / ".config" / "systemd" / "user" / UNIT_NAME


ENABLE_COMMANDS = (
    "systemctl --user daemon-reload && systemctl --user enable --now rumi",
    "sudo loginctl enable-linger $USER    # start at boot, without logging in",
)
