"""Groq's `failed_generation` shapes are recovered into calls, prose, or one clear note."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rumi.llm.tool_repair import RecoveredCall, Recovery, recover

TOOLS = ["bash", "read_file", "remember"]
GENERIC = (
    "Failed to call a function. Please adjust your prompt. See 'failed_generation' for more "
    "details."
)
ARGS_NOT_JSON = "Failed to parse tool call arguments as JSON"
NOT_IN_TOOLS = (
    "tool call validation failed: attempted to call tool 'brave_search' which was not in "
    "request.tools"
)
SCHEMA = (
    "tool call validation failed: parameters for tool bash did not match schema: errors: "
    "[missing properties: 'command']"
)


def one_field_set(result: Recovery) -> bool:
    return [bool(result.calls), result.text is not None, result.feedback is not None].count(
        True
    ) == 1


def calls_of(result: Recovery) -> list[tuple[str, dict[str, object]]]:
    assert one_field_set(result)
    assert result.calls, f"expected calls, got {result}"
    return [(call.name, json.loads(call.arguments)) for call in result.calls]


LS = [("bash", {"command": "ls"})]


# --- call syntax ------------------------------------------------------------------------------

@pytest.mark.parametrize(
    "generation",
    [
        '<function=bash>{"command": "ls"}</function>',
        '<function=bash={"command": "ls"}</function>',
        '<function=bash,{"command": "ls"}></function>',
        '<function=bash {"command": "ls"}></function>',
        'bash{"command": "ls"}</function>',
        '<function>bash{"command": "ls"}</function>',
        '<function=bash>\n{"command": "ls"}\n</function>',
        'Voy a listar los archivos.\n<function=bash>{"command": "ls"}</function>',
        'Voy a listar los archivos.\nbash{"command": "ls"}</function>',
    ],
)
def test_function_tag_variants(generation: str) -> None:
    assert calls_of(recover(generation, GENERIC, TOOLS)) == LS


def test_several_function_blocks_become_several_calls_in_order() -> None:
    generation = (
        '<function=bash>{"command": "ls"}</function>\n'
        '<function=read_file>{"path": "/workspace/a.txt"}</function>'
    )
    assert calls_of(recover(generation, GENERIC, TOOLS)) == [
        ("bash", {"command": "ls"}),
        ("read_file", {"path": "/workspace/a.txt"}),
    ]


def test_several_glued_calls() -> None:
    generation = 'bash{"command": "ls"}</function>read_file{"path": "a"}</function>'
    assert [name for name, _ in calls_of(recover(generation, GENERIC, TOOLS))] == [
        "bash", "read_file",
    ]


def test_closing_tag_inside_a_valid_json_string_is_kept() -> None:
    generation = '<function=bash>{"command": "echo </function> <function=x>"}</function>'
    assert calls_of(recover(generation, GENERIC, TOOLS)) == [
        ("bash", {"command": "echo </function> <function=x>"})
    ]


def test_tool_without_arguments_gets_an_empty_object() -> None:
    assert calls_of(recover("<function=remember></function>", GENERIC, TOOLS)) == [
        ("remember", {})
    ]


def test_unicode_arguments_survive() -> None:
    generation = '<function=bash>{"command": "echo ñandú 🦤"}</function>'
    assert calls_of(recover(generation, GENERIC, TOOLS)) == [
        ("bash", {"command": "echo ñandú 🦤"})
    ]


# --- JSON shapes ------------------------------------------------------------------------------

FENCED = (
    '```json\n{"tool_calls": [{"id": "pending", "type": "function", "function": {"name": '
    '"bash"}, "parameters": {"command": "ls"}}]}\n```'
)


@pytest.mark.parametrize(
    "generation",
    [
        FENCED,
        '{"name": "bash", "arguments": {"command": "ls"}}',
        '{"name": "bash", "parameters": {"command": "ls"}}',
        '{"function": {"name": "bash", "arguments": "{\\"command\\": \\"ls\\"}"}}',
        '[{"name": "bash", "arguments": {"command": "ls"}}]',
        '{"type": "function", "function": {"name": "bash", "parameters": {"command": "ls"}}}',
        '<tool_call>{"name": "bash", "arguments": {"command": "ls"}}</tool_call>',
        '{"tool_uses": [{"recipient_name": "functions.bash", "parameters": {"command": "ls"}}]}',
        'Ejecuto esto:\n```\n{"name": "bash", "arguments": {"command": "ls"}}\n```',
    ],
)
def test_json_call_shapes(generation: str) -> None:
    assert calls_of(recover(generation, GENERIC, TOOLS)) == LS


def test_list_of_json_calls() -> None:
    generation = json.dumps([
        {"name": "bash", "arguments": {"command": "ls"}},
        {"function": {"name": "read_file", "arguments": json.dumps({"path": "x"})}},
    ])
    assert calls_of(recover(generation, GENERIC, TOOLS)) == [
        ("bash", {"command": "ls"}),
        ("read_file", {"path": "x"}),
    ]


def test_call_inside_prose_is_taken_only_for_known_tools() -> None:
    known = 'Voy a ejecutar {"name": "bash", "arguments": {"command": "ls"}} ahora.'
    unknown = 'Un ejemplo: {"name": "Ana", "arguments": {"edad": 3}} y listo.'
    assert calls_of(recover(known, GENERIC, TOOLS)) == LS
    assert recover(unknown, GENERIC, TOOLS) == Recovery(text=unknown)


# --- argument repair --------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ("{'command': 'ls'}", {"command": "ls"}),
        ('{"command": "ls",}', {"command": "ls"}),
        ('{"command": "echo a\nb"}', {"command": "echo a\nb"}),
        ('{"path": "a", "force": True, "mode": None}', {"path": "a", "force": True, "mode": None}),
        ('{"command": "ls"', {"command": "ls"}),
        ('{"command": "ls -la", "timeout": 30', {"command": "ls -la", "timeout": 30}),
    ],
)
def test_small_json_faults_are_repaired(arguments: str, expected: dict[str, object]) -> None:
    result = recover(f"<function=bash>{arguments}</function>", GENERIC, TOOLS)
    assert calls_of(result) == [("bash", expected)]
    json.loads(result.calls[0].arguments)


def test_faulty_string_arguments_in_json_shape_are_repaired() -> None:
    generation = json.dumps({"name": "bash", "arguments": "{'command': 'ls',}"})
    assert calls_of(recover(generation, GENERIC, TOOLS)) == LS


@pytest.mark.parametrize(
    ("generation", "described"),
    [
        ('<function=bash>["ls", "-la"]</function>', "a list"),
        ('<function=bash>"ls -la"</function>', "a string"),
        ("<function=bash>ls -la</function>", '"ls -la"'),
        ('{"name": "bash", "arguments": [1, 2]}', "a list"),
        ('{"name": "bash", "arguments": 5}', "a number"),
        ('{"name": "bash", "arguments": "ls -la"}', "a string"),
    ],
)
def test_non_object_arguments_give_feedback_not_empty_args(
    generation: str, described: str
) -> None:
    result = recover(generation, GENERIC, TOOLS)
    assert one_field_set(result)
    assert result.feedback is not None
    assert "`bash`" in result.feedback
    assert described in result.feedback
    assert "JSON object" in result.feedback


def test_one_bad_call_among_good_ones_is_feedback() -> None:
    generation = (
        '<function=bash>{"command": "ls"}</function><function=read_file>[1]</function>'
    )
    result = recover(generation, GENERIC, TOOLS)
    assert result.calls == []
    assert result.feedback is not None
    assert "`read_file`" in result.feedback


def test_nan_arguments_are_not_passed_on_as_invalid_json() -> None:
    result = recover('<function=bash>{"command": "ls", "n": NaN}</function>', GENERIC, TOOLS)
    assert result.calls == []
    assert result.feedback is not None
    assert "`bash`" in result.feedback


# --- prose and empty --------------------------------------------------------------------------

@pytest.mark.parametrize(
    "generation",
    [
        "Claro, aquí tienes la lista de archivos: a.txt, b.txt",
        "  La function `len` de Python devuelve la longitud.  \n",
        "Here is the config:\n```json\n{\"debug\": true}\n```",
    ],
)
def test_prose_is_text(generation: str) -> None:
    assert recover(generation, GENERIC, TOOLS) == Recovery(text=generation.strip())


@pytest.mark.parametrize("generation", [None, "", "   \n"])
def test_empty_generation_is_feedback(generation: str | None) -> None:
    result = recover(generation, GENERIC, TOOLS)
    assert one_field_set(result)
    assert result.feedback is not None
    assert "bash, read_file, remember" in result.feedback


def test_json_without_a_tool_name_is_feedback_not_a_guess() -> None:
    result = recover('{"command": "ls"}', GENERIC, TOOLS)
    assert result.calls == []
    assert result.feedback is not None
    assert '{"command": "ls"}' in result.feedback


def test_garbled_tag_is_feedback() -> None:
    result = recover("</function>", GENERIC, TOOLS)
    assert result.feedback is not None and result.calls == []


# --- Groq's error messages --------------------------------------------------------------------

def test_unknown_tool_in_parseable_generation_is_still_a_call() -> None:
    generation = '<function=brave_search>{"query": "clima"}</function>'
    assert calls_of(recover(generation, NOT_IN_TOOLS, TOOLS)) == [
        ("brave_search", {"query": "clima"})
    ]


@pytest.mark.parametrize("generation", [None, "", "brave_search"])
def test_unknown_tool_with_nothing_parseable_names_it_and_lists_tools(
    generation: str | None,
) -> None:
    result = recover(generation, NOT_IN_TOOLS, TOOLS)
    assert one_field_set(result)
    assert result.feedback is not None
    assert "brave_search" in result.feedback
    assert "bash, read_file, remember" in result.feedback


@pytest.mark.parametrize(
    "generation",
    [
        "ls -la /workspace",
        "import os\nfor name in os.listdir('.'):\n    print(name)\n",
        '{"command": "ls',
        "Claro, aquí tienes",
    ],
)
def test_bare_arguments_are_quoted_back_without_guessing_a_tool(generation: str) -> None:
    result = recover(generation, ARGS_NOT_JSON, TOOLS)
    assert one_field_set(result)
    assert result.calls == []
    assert result.feedback is not None
    assert " ".join(generation.split())[:40] in result.feedback
    assert "JSON object matching the tool's schema" in result.feedback


def test_quoted_generation_is_capped() -> None:
    generation = "x" * 5000
    result = recover(generation, ARGS_NOT_JSON, TOOLS)
    assert result.feedback is not None
    assert "x" * 200 not in result.feedback
    assert "x" * 150 in result.feedback
    assert len(result.feedback) < 600


def test_schema_failure_with_parseable_generation_returns_the_call() -> None:
    generation = '<function=bash>{"cmd": "ls"}</function>'
    assert calls_of(recover(generation, SCHEMA, TOOLS)) == [("bash", {"cmd": "ls"})]


def test_schema_failure_with_nothing_parseable_quotes_groq() -> None:
    result = recover("", SCHEMA, TOOLS)
    assert result.feedback is not None
    assert "missing properties: 'command'" in result.feedback


def test_feedback_without_tools_says_so() -> None:
    result = recover("", GENERIC, [])
    assert result.feedback is not None
    assert "No tools are available" in result.feedback


# --- robustness -------------------------------------------------------------------------------

def test_results_are_plain_values() -> None:
    result = recover('<function=bash>{"command": "ls"}</function>', GENERIC, TOOLS)
    assert result.calls == [RecoveredCall(name="bash", arguments='{"command": "ls"}')]


def test_deeply_nested_input_does_not_raise() -> None:
    generation = "<function=bash>" + "[" * 5000 + "</function>"
    assert one_field_set(recover(generation, GENERIC, TOOLS))
    assert one_field_set(recover("{" * 5000, GENERIC, TOOLS))
    assert one_field_set(recover('{"a":' * 3000, GENERIC, TOOLS))


call_fragments = st.sampled_from([
    "<function=", "</function>", "bash", "{", "}", "[", "]", '"', "'", ",", ":", "=", ">",
    "```json\n", "```", '"name"', '"arguments"', "tool_calls", "<tool_call>", " ", "\n",
    "True", "None", "NaN", "\\",
])


@settings(max_examples=300, deadline=None)
@given(
    st.one_of(st.none(), st.text(max_size=200), st.lists(call_fragments, max_size=30).map("".join)),
    st.sampled_from([GENERIC, ARGS_NOT_JSON, NOT_IN_TOOLS, SCHEMA, ""]),
    st.lists(st.text(max_size=10), max_size=4),
)
def test_any_input_gives_exactly_one_outcome(
    generation: str | None, message: str, tools: list[str]
) -> None:
    result = recover(generation, message, tools)
    assert one_field_set(result)
    for call in result.calls:
        assert call.name
        assert isinstance(json.loads(call.arguments), dict)
    if result.text is not None:
        assert result.text == result.text.strip() and result.text


def test_a_command_cut_inside_its_string_is_not_run_but_asked_again() -> None:
    generation = '<function=bash>{"command": "rm -rf /workspace/build/old</function>'
    recovery = recover(generation, "Failed to call a function.", ["bash"])
    assert recovery.calls == [] and recovery.feedback and "bash" in recovery.feedback
