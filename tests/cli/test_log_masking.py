"""No secret in any log line (`rumi.cli.logs`): the configured ones in any case, anything
shaped like a bot token or a Groq key, in messages, arguments and tracebacks; and log files an
older version wrote are scrubbed."""

from __future__ import annotations

import io
import logging

from rumi.cli.logs import MaskingFormatter, OneLineFormatter, mask_handlers, scrub_logs
from rumi.secret_mask import SecretMask

TOKEN = "777:E2E-token"
SHAPED = "123456789:AAHk3xJ9mLqW2vPz8YtR4nBcD6eFgH1iJ0kLm"
KEY = "gsk_" + "a1B2" * 12


def capture(formatter: logging.Formatter) -> tuple[logging.Logger, io.StringIO]:
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(formatter)
    logger = logging.getLogger(f"test-mask-{id(out)}")
    logger.propagate = False
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    mask_handlers(logger, SecretMask([TOKEN, KEY]))
    return logger, out


def test_messages_arguments_and_tracebacks_are_masked() -> None:
    logger, out = capture(logging.Formatter("%(levelname)s %(message)s"))
    logger.debug("Set Bot API URL: http://127.0.0.1:1/bot%s", TOKEN)
    logger.info("quoted: POST /bot%s/sendmessage and %s", TOKEN.lower(), SHAPED)
    try:
        raise RuntimeError(f"Authorization: Bearer {KEY}")
    except RuntimeError:
        logger.exception("failed")
    text = out.getvalue()
    assert "/bot***" in text and "Bearer ***" in text and "Traceback" in text
    for secret in (TOKEN, KEY, SHAPED, "e2e-token"):
        assert secret.lower() not in text.lower()


def test_the_one_line_stderr_format_is_masked_too() -> None:
    logger, out = capture(OneLineFormatter())
    try:
        raise ValueError(f"bad answer from /bot{TOKEN}/getMe")
    except ValueError:
        logger.warning("telegram failed", exc_info=True)
    assert "E2E-token" not in out.getvalue() and "/bot***/getMe" in out.getvalue()
    assert isinstance(logger.handlers[0].formatter, MaskingFormatter)


def test_log_files_an_older_version_wrote_are_scrubbed(tmp_path) -> None:  # noqa: ANN001
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "rumi.log").write_text(f"DEBUG Set Bot API URL: http://x/bot{TOKEN}\nok\n")
    (logs / "rumi.log.1").write_text(f"key {KEY}\n")
    (logs / "rumi.log.2").write_text("nothing secret\n")
    assert scrub_logs(tmp_path, [TOKEN, KEY]) == 2
    assert (logs / "rumi.log").read_text() == "DEBUG Set Bot API URL: http://x/bot***\nok\n"
    assert (logs / "rumi.log.1").read_text() == "key ***\n"
    assert (logs / "rumi.log").stat().st_mode & 0o777 == 0o600


def test_a_backup_never_carries_a_secret_an_older_version_logged(tmp_path) -> None:  # noqa: ANN001
    import tarfile

    from rumi.cli import main

    data = tmp_path / "data"
    (data / "logs").mkdir(parents=True)
    (data / "logs" / "rumi.log").write_text(f"DEBUG Set Bot API URL: http://x/bot{TOKEN}\n")
    config = tmp_path / "config.toml"
    config.write_text(f'data_dir = "{data}"\n[telegram]\ntoken = "{TOKEN}"\n'
                      f'[llm]\napi_key = "{KEY}"\n', encoding="utf-8")
    assert main(["backup", "--config", str(config), "--out", str(tmp_path / "out")]) == 0
    [archive] = (tmp_path / "out").glob("rumi-backup-*.tar.gz")
    with tarfile.open(archive) as tar:
        handle = tar.extractfile("logs/rumi.log")
        assert handle is not None
        assert handle.read() == b"DEBUG Set Bot API URL: http://x/bot***\n"
