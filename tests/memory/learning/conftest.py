"""The wired memory rig (tests/memory/rig.py) for these tests."""

from tests.memory.rig import clock, llm, rig, settings, store  # noqa: F401
