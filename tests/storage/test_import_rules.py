"""Single rules of the import, each on real lines where the real tools wrote one (an excerpt of
a real file, tests/fixtures/excerpts) or on the smallest input that shows it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rollchat.domain import ToolUse
from rollchat.errors import UsageError
from rollchat.storage.imports import SUPPORTED, read_transcript

EXCERPTS = Path(__file__).parent.parent / "fixtures" / "excerpts"


def test_a_task_notification_and_an_interruption_do_not_open_turns() -> None:
    """Claude Code writes a background task's end as a user line (``<task-notification>``) and
    the model answers it: the answer stays in the turn of the prompt the user typed."""
    path = EXCERPTS / "spotter-258c7280-task-notification.jsonl"
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    got = read_transcript(path.read_bytes(), path.name)
    [turn] = got.turns
    assert turn.user == rows[0]["message"]["content"]
    assert got.folded == {"interruption": 1, "task notification": 1}
    assert got.left_out == {"thinking block": 1}
    [call] = [b for b in turn.blocks if isinstance(b, ToolUse)]  # the excerpt ends before
    # its result
    assert call.call.id == rows[-1]["message"]["content"][0]["id"]
    assert [type(b).__name__ for b in turn.blocks] == ["Note", "Note", "ToolUse"]
    assert "b0be39e" not in (got.title or "") and "<task" not in turn.user


def line(kind: str, content: object, **extra: object) -> str:
    return json.dumps({"type": kind, "message": {"role": kind, "content": content},
                       "timestamp": "2026-01-01T10:00:00Z", **extra})


def test_system_reminders_are_taken_out_of_what_the_user_typed() -> None:
    text = "fix the test<system-reminder>\nThe user opened foo.py\n</system-reminder>"
    data = "\n".join([line("user", text), line("assistant", "done")]).encode()
    got = read_transcript(data, "x.jsonl")
    assert [t.user for t in got.turns] == ["fix the test"]
    assert got.folded == {"system reminder": 1}


def test_a_file_of_nothing_but_the_tools_own_lines_has_no_turn() -> None:
    data = "\n".join([line("user", "<command-name>/clear</command-name>\n"
                               "<command-message>clear</command-message>"),
                      line("user", "<local-command-stdout></local-command-stdout>")]).encode()
    got = read_transcript(data, "x.jsonl")
    assert got.turns == [] and got.folded == {"slash command": 1}


def test_an_unknown_format_names_every_supported_one() -> None:
    with pytest.raises(UsageError) as caught:
        read_transcript(b'{"conversations": []}\n', "export.json")
    message = str(caught.value)
    assert "export.json: unknown format" in message and SUPPORTED in message
    for name in ("Claude Code", "Codex", "gemini-cli", "aider", "llm logs --json", "markdown"):
        assert name in SUPPORTED


def codex_line(payload: dict[str, object], kind: str = "response_item") -> str:
    return json.dumps({"timestamp": "2026-01-01T10:00:00Z", "type": kind, "payload": payload})


def codex_user(text: str, role: str = "user") -> str:
    return codex_line({"type": "message", "role": role,
                       "content": [{"type": "input_text", "text": text}]})


def test_codex_preambles_developer_messages_and_aborts_are_folded() -> None:
    """Newer Codex files open with a developer message, the project's AGENTS.md and the
    environment as user messages: none is a prompt or the title."""
    data = "\n".join([
        codex_line({"id": "s", "cwd": "/w"}, "session_meta"),
        codex_user("<permissions instructions>sandbox: workspace-write</permissions "
                   "instructions>", "developer"),
        codex_user("# AGENTS.md instructions for /w\n\n<INSTRUCTIONS>be brief</INSTRUCTIONS>"),
        codex_user("<environment_context>\n  <cwd>/w</cwd>\n</environment_context>"),
        codex_user("rename the module"),
        codex_line({"type": "turn_aborted", "reason": "interrupted"}, "event_msg"),
        codex_user("<turn_aborted>\nThe user interrupted the previous turn.\n</turn_aborted>"),
        codex_user("<turn_aborted>\nno event before this one\n</turn_aborted>"),
        codex_line({"type": "compacted", "message": "Renamed half the files."}, "compacted"),
        codex_user("go on"),
        codex_line({"type": "message", "role": "assistant",
                    "content": [{"type": "output_text", "text": "Done."}]}),
    ]).encode()
    got = read_transcript(data, "rollout.jsonl")
    assert [t.user for t in got.turns] == ["rename the module", "go on"]
    assert got.title == "rename the module"
    assert got.folded == {"developer message": 1, "AGENTS.md instructions": 1,
                          "environment context": 1, "interruption": 2,
                          "compaction summary": 1}


def test_a_slash_command_that_asks_the_model_is_a_prompt_a_local_one_a_note() -> None:
    """/init expands to a prompt (an isMeta line) that the model answers: the user typed
    "/init". /model only changes a setting (its output follows): a note in the open turn."""
    data = "\n".join([
        line("user", "<command-message>init is analyzing your codebase…</command-message>\n"
                     "<command-name>/init</command-name>"),
        line("user", [{"type": "text", "text": "Please analyze this codebase"}], isMeta=True),
        line("assistant", "I'll look around."),
        line("user", "<command-name>/model</command-name>\n<command-args></command-args>"),
        line("user", "<local-command-stdout>Kept model as Default</local-command-stdout>"),
    ]).encode()
    got = read_transcript(data, "x.jsonl")
    [turn] = got.turns
    assert turn.user == "/init" and turn.assistant == "I'll look around."
    assert got.title == "/init"
    assert got.folded == {"slash command": 2, "command prompt": 1}


def test_the_title_is_the_users_own_then_the_summary_line_then_the_first_prompt() -> None:
    prompt = [line("user", "list the files"), line("assistant", "a.py")]
    summary = json.dumps({"type": "summary", "summary": "Listing files", "leafUuid": "x"})
    named = json.dumps({"type": "custom-title", "customTitle": "my listing", "sessionId": "s"})
    ai = json.dumps({"type": "ai-title", "aiTitle": "File listing", "sessionId": "s"})
    assert read_transcript("\n".join(prompt).encode(), "x.jsonl").title == "list the files"
    assert read_transcript("\n".join([ai, *prompt]).encode(), "x.jsonl").title == "File listing"
    assert read_transcript("\n".join([ai, *prompt, summary]).encode(),
                           "x.jsonl").title == "Listing files"
    assert read_transcript("\n".join([summary, *prompt, named, ai]).encode(),
                           "x.jsonl").title == "my listing"


def test_claude_codes_own_replies_are_notes_not_the_models() -> None:
    """An API error or "No response requested." is written as an assistant line of model
    "<synthetic>": Claude Code said it, not the model."""
    synthetic = {"role": "assistant", "model": "<synthetic>", "content": [
        {"type": "text", "text": "API Error: 529 {\"type\":\"overloaded_error\"}"}]}
    data = "\n".join([line("user", "deploy it"),
                      json.dumps({"type": "assistant", "message": synthetic,
                                  "isApiErrorMessage": True}),
                      line("assistant", "Deployed.")]).encode()
    got = read_transcript(data, "x.jsonl")
    [turn] = got.turns
    assert turn.assistant == "Deployed." and got.model is None
    assert [n.text for n in turn.notes] == ['API Error: 529 {"type":"overloaded_error"}']
    assert got.folded == {"reply by the tool": 1}
