"""The stand-in chat model behind the fake Groq reads requests the way chat models do."""

from __future__ import annotations

import json

from tests.fakes.chat_model import StandInModel, ToolRule, latest_user_text, pending_tool_results

TOOLS = [{"type": "function", "function": {"name": "bash", "parameters": {}}}]


def model() -> StandInModel:
    return StandInModel(rules=[ToolRule(r"run `([^`]+)`", "bash", lambda m: {"command": m[1]})],
                        reply="You said: {said}", after_tool="Output: {output}")


def test_it_answers_the_latest_user_message_even_after_a_note_of_the_client() -> None:
    body = {"tools": TOOLS, "messages": [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "please run `ls`"},
        {"role": "user", "content": "[note] memories and a dashboard"}]}
    answer = model()(body)
    assert answer == {"role": "assistant", "content": "You said: [note] memories and a dashboard"}
    body["messages"][1:] = body["messages"][:0:-1]   # the note first, the person last
    call = model()(body)["tool_calls"][0]["function"]
    assert call["name"] == "bash" and json.loads(call["arguments"]) == {"command": "ls"}


def test_after_tool_results_it_answers_instead_of_calling_again() -> None:
    stand_in = model()
    messages = [{"role": "user", "content": "run `ls`"}]
    first = stand_in({"tools": TOOLS, "messages": messages})
    messages += [first, {"role": "tool", "tool_call_id": first["tool_calls"][0]["id"],
                         "content": "a.txt"}]
    assert pending_tool_results({"messages": messages}) == [messages[-1]]
    assert stand_in({"tools": TOOLS, "messages": messages})["content"] == "Output: a.txt"
    messages += [{"role": "assistant", "content": "Output: a.txt"},
                 {"role": "user", "content": "thanks"}]
    assert pending_tool_results({"messages": messages}) == []
    assert stand_in({"tools": TOOLS, "messages": messages})["content"] == "You said: thanks"
    assert [name for name, _ in stand_in.calls] == ["bash"]


def test_a_rule_for_a_tool_not_offered_is_not_followed_and_json_mode_gets_json() -> None:
    body = {"messages": [{"role": "user", "content": [{"type": "text", "text": "run `ls`"}]}]}
    assert latest_user_text(body) == "run `ls`"
    assert model()(body)["content"] == "You said: run `ls`"
    assert model()({**body, "response_format": {"type": "json_object"}})["content"] == "{}"
