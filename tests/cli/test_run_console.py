"""`rumi run`'s console is as calm as `rumi chat`'s: the warnings a person must act on, one line
each; INFO lines and tracebacks only in the log file (`--verbose` shows everything)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from rumi.cli import build_parser

REPO = Path(__file__).resolve().parents[2]

PROBE = """
import logging, sys
from pathlib import Path
from rumi.cli.logs import setup_logging
setup_logging('INFO', Path(sys.argv[1]), console=sys.argv[2] == 'verbose', warnings=True)
logging.getLogger('rumi.memory.store.schema').info('applied migration 7')
logging.getLogger('watchfiles.main').info('1 change detected')
logging.getLogger('huggingface_hub.utils._http').warning('You are sending unauthenticated requests')
import warnings
warnings.warn('Loading a copy downloaded from Google Cloud Storage', FutureWarning)
logging.getLogger('rumi.sandbox.feature').warning('sandbox unavailable: image missing\\nsecond')
try:
    raise ConnectionError("HTTPSConnectionPool(host='openaipublic.blob.core.windows.net')")
except ConnectionError:
    logging.getLogger('rumi.context.tokens').exception('tiktoken download failed')
"""


def probe(tmp_path: Path, mode: str) -> tuple[str, str]:
    done = subprocess.run([sys.executable, "-c", PROBE, str(tmp_path / "data"), mode],
                          capture_output=True, text=True, timeout=60, cwd=REPO, check=False)
    assert done.returncode == 0, done.stderr
    return done.stderr, (tmp_path / "data" / "logs" / "rumi.log").read_text(encoding="utf-8")


def test_run_console_shows_only_warnings_one_line_each(tmp_path: Path) -> None:
    stderr, logged = probe(tmp_path, "calm")
    lines = stderr.splitlines()
    assert lines == [
        "WARNING rumi.sandbox.feature: sandbox unavailable: image missing",
        "ERROR rumi.context.tokens: tiktoken download failed (ConnectionError: "
        "HTTPSConnectionPool(host='openaipublic.blob.core.windows.net'))",
    ]
    for everything in ("applied migration 7", "1 change detected", "second", "Traceback",
                       "unauthenticated requests", "Google Cloud Storage"):
        assert everything in logged


def test_verbose_run_console_shows_everything(tmp_path: Path) -> None:
    stderr, _ = probe(tmp_path, "verbose")
    assert "applied migration 7" in stderr and "Traceback" in stderr
    assert stderr.count("sandbox unavailable") == 1  # one handler, not two


def test_rumi_run_takes_verbose() -> None:
    assert build_parser().parse_args(["run", "--verbose"]).verbose is True
    assert build_parser().parse_args(["run"]).verbose is False
