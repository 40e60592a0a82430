"""The pairing file: one code per stranger, at most one notice an hour, approvals that survive
a bad edit of the file."""

from __future__ import annotations

import json
import stat

import pytest

from rumi.channels.pairing import (
    CODE_ALPHABET,
    NOTICE_EVERY_SECONDS,
    PairingError,
    PairingStore,
    pairing_path,
)


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def test_one_code_per_person_and_one_notice_an_hour(data_dir):
    clock = Clock()
    store = PairingStore(data_dir, clock=clock)
    first = store.request(42, "Eva", "eva")
    assert first is not None and set(first.code) <= set(CODE_ALPHABET)
    assert store.request(42, "Eva", "eva") is None  # told already: silence
    clock.now += NOTICE_EVERY_SECONDS + 1
    again = store.request(42, "Eva", "eva")
    assert again is not None and again.code == first.code
    assert [r.user_id for r in store.load().pending] == [42]
    assert stat.S_IMODE(pairing_path(data_dir).stat().st_mode) == 0o600


def test_approve_and_deny(data_dir):
    store = PairingStore(data_dir)
    eva, mallory = store.request(42, "Eva"), store.request(66, "Mallory")
    assert not store.is_approved(42)
    assert store.approve(eva.code.lower()).user_id == 42  # typed in lower case
    assert store.is_approved(42) and store.request(42) is None
    store.deny(mallory.code)
    assert store.request(66) is None and not store.is_approved(66)
    assert store.load().pending == []
    with pytest.raises(PairingError, match="no pending request"):
        store.approve(eva.code)


def test_a_damaged_file_is_never_overwritten(data_dir):
    store = PairingStore(data_dir)
    store.approve(store.request(42).code)
    path = pairing_path(data_dir)
    damaged = path.read_text()[:-5]
    path.write_text(damaged)
    assert not store.is_approved(42)  # the bot's check reads it as empty…
    with pytest.raises(PairingError, match="nothing was changed"):
        store.request(99)  # …but no write replaces it
    assert path.read_text() == damaged
    path.write_text(json.dumps({"pending": [], "approved": [42], "denied": []}))
    assert store.is_approved(42)
