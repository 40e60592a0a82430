"""The owner lock: held while a Rumi runs on a data dir, gone when its process dies."""

from __future__ import annotations

import subprocess
import sys

from rumi.sandbox import ownerlock


def test_held_while_taken_and_free_after(data_dir):
    assert not ownerlock.held_elsewhere(data_dir)
    fd = ownerlock.take(data_dir)
    assert fd is not None
    assert ownerlock.held_elsewhere(data_dir) and ownerlock.take(data_dir) is None
    ownerlock.release(fd)
    assert not ownerlock.held_elsewhere(data_dir)


def test_a_killed_process_leaves_no_lock(data_dir):
    child = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from rumi.sandbox import ownerlock; "
         f"assert ownerlock.take({str(data_dir)!r}) is not None; print('held', flush=True); "
         "time.sleep(60)"], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "held"
        assert ownerlock.held_elsewhere(data_dir)
    finally:
        child.kill()
        child.wait()
    assert not ownerlock.held_elsewhere(data_dir)
