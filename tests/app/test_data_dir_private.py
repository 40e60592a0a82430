"""The data dir holds every chat's memory: Rumi creates it 0700 from its first moment, and
the doctor then has nothing to ask."""

from __future__ import annotations

import os
import stat

from rumi.app import build_app
from rumi.doctor.checks import check_data_dir
from rumi.fileio import ensure_private_dir


def test_created_private_whatever_the_umask(tmp_path):
    old = os.umask(0o002)
    try:
        made = ensure_private_dir(tmp_path / "a" / "data")
    finally:
        os.umask(old)
    assert stat.S_IMODE(made.stat().st_mode) == 0o700
    assert check_data_dir(made).status.value == "OK"


def test_an_existing_directory_is_left_as_the_person_set_it(tmp_path):
    existing = tmp_path / "shared"
    existing.mkdir(mode=0o750)
    os.chmod(existing, 0o750)
    ensure_private_dir(existing)
    assert stat.S_IMODE(existing.stat().st_mode) == 0o750


async def test_app_start_creates_a_private_data_dir(make_settings, tmp_path):
    settings = make_settings(
        '[llm]\napi_key = "gsk_test"\nbase_url = "http://127.0.0.1:9"\n'
        '[sandbox]\nenabled = false\n[memory]\nembeddings_enabled = false\n')
    data_dir = tmp_path / "fresh" / "rumi"
    settings.data_dir = data_dir
    app = await build_app(settings)
    try:
        await app.start()
    finally:
        await app.stop()
    assert stat.S_IMODE(data_dir.stat().st_mode) == 0o700
    assert check_data_dir(data_dir).status.value == "OK"
