"""The loop's breakers' counts and the storable form of tool calls (`rumi/agent/tool_calls.py`),
checked on their own: the loop's tests drive them end to end against the fake Groq server."""

from __future__ import annotations

from rumi.agent.tool_calls import Breakers, bad_arguments_text, canonical, storable_calls
from rumi.config import AgentSettings


def test_the_same_call_in_another_key_order_counts_as_repeated() -> None:
    breakers = Breakers(AgentSettings(max_repeated_calls=3))
    assert not breakers.repeated("bash", '{"command": "ls", "timeout": 5}')
    assert not breakers.repeated("bash", '{ "timeout": 5, "command": "ls" }')
    assert not breakers.repeated("bash", '{"command": "ls -a"}')   # another call
    assert breakers.repeated("bash", '{"timeout":5,"command":"ls"}')


def test_a_success_resets_the_run_of_failing_tools() -> None:
    breakers = Breakers(AgentSettings(max_consecutive_tool_errors=2))
    assert not breakers.failing(True)
    assert not breakers.failing(False)
    assert not breakers.failing(True)
    assert breakers.failing(True)
    assert breakers.consecutive_errors == 2


def test_arguments_that_are_not_an_object_are_stored_empty_and_kept_for_the_error() -> None:
    calls = [{"id": "a", "function": {"name": "bash", "arguments": "ls -la"}},
             {"id": "b", "function": {"name": "bash", "arguments": '{"command": "pwd"}'}},
             {"id": "c", "function": {"name": "bash", "arguments": ""}}]
    stored, bad = storable_calls(calls, ["bash"])
    assert [c["function"]["arguments"] for c in stored] == ["{}", '{"command": "pwd"}', "{}"]
    assert bad == {"a": "ls -la"}   # an empty string means "no arguments", not an error
    assert "'ls -la'" in bad_arguments_text(bad["a"])
    assert canonical("not json ") == "not json"
