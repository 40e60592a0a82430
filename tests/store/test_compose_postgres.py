"""docker/compose.yaml's optional PostgreSQL: off by default (a profile), the pgvector project's
image, a healthcheck, a named volume, pgvector created at first start, no password written in
the file, and the bot handed the store URL as a secret from docker/.env."""

from __future__ import annotations

import os
import shutil
import subprocess

import yaml

from tests.conftest import REPO, require

COMPOSE = REPO / "docker" / "compose.yaml"


def test_postgres_service_is_optional_and_healthchecked() -> None:
    doc = yaml.safe_load(COMPOSE.read_text(encoding="utf-8"))
    service = doc["services"]["postgres"]
    assert service["profiles"] == ["postgres"]
    assert service["image"].startswith("pgvector/pgvector:")
    assert "pg_isready" in " ".join(service["healthcheck"]["test"])
    volumes = [v for v in service["volumes"] if isinstance(v, str)]
    assert volumes == ["rumi-postgres:/var/lib/postgresql/data"]
    assert "rumi-postgres" in doc["volumes"]
    init = next(v for v in service["volumes"] if isinstance(v, dict))
    script = (COMPOSE.parent / init["source"]).read_text(encoding="utf-8")
    assert init["target"].startswith("/docker-entrypoint-initdb.d/")
    assert "CREATE EXTENSION IF NOT EXISTS vector" in script
    assert service["environment"]["POSTGRES_PASSWORD"] == "${POSTGRES_PASSWORD:-}"
    assert service["ports"] == ["${POSTGRES_PUBLISH:-127.0.0.1:5432}:5432"]
    bot = doc["services"]["rumi"]
    assert bot["environment"]["RUMI_STORE_URL"] == "${RUMI_STORE_URL:-}"
    assert "depends_on" not in bot  # the bot runs without it; with it, its start check waits


def test_compose_without_postgres_settings_still_validates() -> None:
    """Nobody who skips the profile needs POSTGRES_PASSWORD or RUMI_STORE_URL."""
    compose = shutil.which("docker-compose")
    require(bool(compose), "docker-compose not installed (apt-get install docker-compose)")
    env = {**os.environ, "GROQ_API_KEY": "gsk_x", "TELEGRAM_TOKEN": "1:x"}
    env.pop("POSTGRES_PASSWORD", None)
    env.pop("RUMI_STORE_URL", None)
    plain = subprocess.run([compose, "-f", str(COMPOSE), "config"],
                           capture_output=True, text=True, env=env, check=False)
    assert plain.returncode == 0, plain.stderr
    assert yaml.safe_load(plain.stdout)["services"]["rumi"]["environment"]["RUMI_STORE_URL"] \
        == ""
    with_pg = subprocess.run([compose, "-f", str(COMPOSE), "--profile", "postgres", "config"],
                             capture_output=True, text=True, check=False,
                             env={**env, "POSTGRES_PASSWORD": "pw-from-env-file",
                                  "RUMI_STORE_URL": "postgresql://rumi:pw@postgres:5432/rumi"})
    assert with_pg.returncode == 0, with_pg.stderr
    rendered = yaml.safe_load(with_pg.stdout)["services"]
    assert rendered["postgres"]["environment"]["POSTGRES_PASSWORD"] == "pw-from-env-file"
    assert rendered["rumi"]["environment"]["RUMI_STORE_URL"].endswith("@postgres:5432/rumi")
    assert "pw-from-env-file" not in COMPOSE.read_text(encoding="utf-8")
