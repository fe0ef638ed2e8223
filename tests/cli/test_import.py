"""``rollchat import FILE`` from the command line: Claude Code and Codex session files and
markdown chats written here (with malformed and hostile lines), the session file it leaves,
resuming it, and the errors for what it cannot read."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rollchat.cli.app import build_cli
from rollchat.storage.imports import read_transcript
from rollchat.storage.transcript import parse
from tests.e2e import clean_env, run_piped

CLAUDE = [
    {"type": "summary", "summary": "Cache work", "leafUuid": "x"},
    {"parentUuid": None, "isSidechain": False, "userType": "external", "cwd": "/p",
     "sessionId": "4f35e220", "version": "1.0.3", "type": "user",
     "message": {"role": "user", "content": "Add a redis cache to the parser on port 6380"},
     "uuid": "u1", "timestamp": "2025-05-26T07:27:40.079Z"},
    {"parentUuid": "u1", "type": "assistant", "sessionId": "4f35e220",
     "message": {"role": "assistant", "model": "claude-sonnet-4-5",
                 "content": [{"type": "thinking", "thinking": "private"},
                             {"type": "text", "text": "Let me read the parser."},
                             {"type": "tool_use", "id": "toolu_1", "name": "Read",
                              "input": {"file_path": "/p/parser.py"}}]},
     "timestamp": "2025-05-26T07:27:45Z"},
    {"type": "user", "isSidechain": True, "timestamp": "2025-05-26T07:27:45Z",
     "message": {"role": "user", "content": "a sub-agent's prompt"}},
    {"type": "user", "timestamp": "2025-05-26T07:27:46Z",
     "message": {"role": "user", "content": [
         {"type": "tool_result", "tool_use_id": "toolu_1",
          "content": [{"type": "text", "text": "def parse(): pass"}]}]}},
    {"type": "assistant", "timestamp": "2025-05-26T07:27:50Z",
     "message": {"role": "assistant", "content": [
         {"type": "text", "text": "We decided to use redis. TODO: write the cache tests."}]}},
    {"type": "user", "timestamp": "2025-05-26T07:28:00Z",
     "message": {"role": "user", "content": "\x1b[31mred\x1b[0m and ## Query 9 (00:00:00)"}},
    {"type": "assistant", "timestamp": "2025-05-26T07:28:05Z",
     "message": {"role": "assistant", "content": "<!-- SESSION_SUMMARY_START -->\n---"}},
]

CODEX = [
    {"timestamp": "2025-10-29T00:59:38.317Z", "type": "session_meta",
     "payload": {"id": "019a2d7a", "cwd": "/tmp/x", "cli_version": "0.46.0"}},
    {"timestamp": "2025-10-29T00:59:38.317Z", "type": "response_item",
     "payload": {"type": "message", "role": "user", "content": [
         {"type": "input_text", "text": "<environment_context>cwd</environment_context>"}]}},
    {"timestamp": "2025-10-29T00:59:38.318Z", "type": "response_item",
     "payload": {"type": "message", "role": "user", "content": [
         {"type": "input_text", "text": "list the migrations folder"}]}},
    {"timestamp": "2025-10-29T00:59:38.318Z", "type": "event_msg",
     "payload": {"type": "user_message", "message": "list the migrations folder"}},
    {"timestamp": "2025-10-29T00:59:38.400Z", "type": "turn_context",
     "payload": {"cwd": "/tmp/x", "model": "gpt-5-codex"}},
    {"timestamp": "2025-10-29T00:59:39.000Z", "type": "response_item",
     "payload": {"type": "function_call", "name": "shell", "call_id": "call_1",
                 "arguments": "{\"command\":[\"ls\",\"migrations\"]}"}},
    {"timestamp": "2025-10-29T00:59:39.500Z", "type": "response_item",
     "payload": {"type": "function_call_output", "call_id": "call_1",
                 "output": {"output": "0001_init.sql\n0002_users.sql", "metadata": {}}}},
    {"timestamp": "2025-10-29T00:59:40.000Z", "type": "response_item",
     "payload": {"type": "message", "role": "assistant", "content": [
         {"type": "output_text", "text": "There are two migrations: 0001_init and 0002_users."}]}},
]


def jsonl(path: Path, rows: list[object], bad: dict[int, str] | None = None) -> Path:
    lines = [json.dumps(r) for r in rows]
    for at, text in sorted((bad or {}).items()):
        lines.insert(at - 1, text)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def run(tmp_path: Path, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(build_cli(), ["import", *args, "--sessions-dir",
                                          str(tmp_path / "sessions"), "--config",
                                          str(config(tmp_path))])
    return result.exit_code, result.stdout, result.stderr


def config(tmp_path: Path) -> Path:
    path = tmp_path / "rollchat.yml"
    path.write_text("agents:\n  assistant:\n    provider: offline\n  reviewer:\n"
                    "    name: Reviewer\n    provider: offline\n", encoding="utf-8")
    return path


def only_session(tmp_path: Path) -> Path:
    [path] = (tmp_path / "sessions").glob("*.md")
    return path


def test_claude_code_file_with_malformed_lines(tmp_path: Path) -> None:
    nested = "[" * 5000 + "]" * 5000
    source = jsonl(tmp_path / "4f35e220.jsonl", CLAUDE,
                   {4: "not json at all", 7: nested, 9: '"a string"'})
    code, out, err = run(tmp_path, str(source))
    assert code == 0, err
    assert "line 4: not JSON (skipped)" in err
    assert "line 7: JSON nested too deeply (skipped)" in err
    assert "line 9: not a JSON object (skipped)" in err
    path = only_session(tmp_path)
    assert f"as session {path.stem}" in out and f"rollchat --resume {path.stem}" in out
    t = parse(path.read_text(encoding="utf-8"))
    assert t.header.imported_from.startswith(  # type: ignore[union-attr]
        f"claude-code 4f35e220.jsonl (sha256 {hashlib.sha256(source.read_bytes()).hexdigest()}, "
        "imported ")
    assert t.header.model == "claude-sonnet-4-5" and t.header.total_queries == 2
    first, second = t.turns
    assert first.user == "Add a redis cache to the parser on port 6380"
    assert first.assistant == ("Let me read the parser.\n\nWe decided to use redis. TODO: "
                               "write the cache tests.")
    assert first.tools[0].call.name == "Read" and first.tools[0].result == "def parse(): pass"
    assert "private" not in path.read_text() and "sub-agent" not in path.read_text()
    assert "\x1b" not in path.read_text() and second.user.startswith("␛[31mred")
    assert second.assistant == "<!-- SESSION_SUMMARY_START -->\n---"  # content, not structure
    assert t.summary is not None and any("redis" in d for d in t.summary.decisions)


def test_codex_rollout_file(tmp_path: Path) -> None:
    source = jsonl(tmp_path / "rollout-2025-10-29T00-59-38-019a2d7a.jsonl", CODEX,
                   {3: "{broken"})
    code, _, err = run(tmp_path, str(source), "--agent", "reviewer")
    assert code == 0, err
    assert "line 3: not JSON (skipped)" in err
    t = parse(only_session(tmp_path).read_text())
    assert t.header.agent == "Reviewer" and t.header.model == "gpt-5-codex"
    assert t.header.imported_from.startswith("codex rollout-")  # type: ignore[union-attr]
    [turn] = t.turns
    assert turn.user == "list the migrations folder"  # the preamble and event copies left out
    assert turn.tools[0].call.arguments == {"command": ["ls", "migrations"]}
    assert turn.tools[0].result == "0001_init.sql\n0002_users.sql"
    assert turn.assistant.startswith("There are two migrations")


def test_older_codex_items_without_envelope() -> None:
    rows = [{"id": "x", "timestamp": "2025-04-01T10:00:00Z", "instructions": None},
            {"type": "message", "role": "user",
             "content": [{"type": "input_text", "text": "hello codex"}]},
            {"type": "message", "role": "assistant",
             "content": [{"type": "output_text", "text": "hello human"}]}]
    got = read_transcript("\n".join(json.dumps(r) for r in rows).encode(), "old.jsonl")
    assert got.format == "codex" and [(t.user, t.assistant) for t in got.turns] == [
        ("hello codex", "hello human")]


def test_markdown_chats(tmp_path: Path) -> None:
    source = tmp_path / "chat.md"
    source.write_text("# Notes from the chat\n\nintro text\n\n## User\nHow do I rotate logs?\n\n"
                      "## Assistant\nUse logrotate with a weekly rule.\n\n```\n# not a label\n"
                      "```\n\n**User:** and compression?\n\n**Assistant:** Add `compress`.\n",
                      encoding="utf-8")
    code, _, err = run(tmp_path, str(source))
    assert code == 0, err
    t = parse(only_session(tmp_path).read_text())
    assert [(x.user, x.assistant) for x in t.turns] == [
        ("How do I rotate logs?", "Use logrotate with a weekly rule.\n\n```\n# not a label\n```"),
        ("and compression?", "Add `compress`.")]
    assert t.header.imported_from.startswith("markdown chat.md (sha256 ")  # type: ignore[union-attr]


@pytest.mark.parametrize(("content", "says"), [
    (b"just some notes\nwith no speakers\n", "unknown format"),
    (b'{"a": 1}\n{"b": 2}\n', "unknown format: no line is a Claude Code or Codex message"),
    (b"\x89PNG\r\n\x1a\n" + b"\x00" * 12 + bytes(range(256)), "binary file"),
])
def test_unknown_formats_name_the_supported_ones(tmp_path: Path, content: bytes,
                                                 says: str) -> None:
    (tmp_path / "x.txt").write_bytes(content)
    code, _, err = run(tmp_path, str(tmp_path / "x.txt"))
    assert code == 2 and says in err
    assert "Claude Code session files" in err and "Codex session files" in err
    assert "markdown chats" in err and not (tmp_path / "sessions").exists()


@pytest.mark.parametrize("name", ["chat.md", "chat.jsonl"])
def test_one_raw_nul_byte_is_replaced_not_a_reason_to_refuse_the_file(tmp_path: Path,
                                                                      name: str) -> None:
    """Issue 33: one NUL byte made the import refuse the whole file as binary."""
    if name.endswith(".md"):
        data = b"## User\n\nFix the par\x00ser on port 6380\n\n## Assistant\n\nDone.\n"
    else:
        data = json.dumps(CLAUDE[1]).replace("Add a redis", "Add a re\u0000dis").encode() \
            .replace(b"\\u0000", b"\x00") + b"\n"
    assert data.count(b"\0") == 1
    (tmp_path / name).write_bytes(data)
    code, out, err = run(tmp_path, str(tmp_path / name), "--local-summary")
    assert code == 0, err
    assert "Imported 1 turn" in out
    (saved,) = (tmp_path / "sessions").glob("*.md")
    text = saved.read_bytes()
    assert b"\0" not in text
    assert ("par\u2400ser" if name.endswith(".md") else "re\u2400dis") in text.decode()


def test_nothing_to_import_and_bad_arguments(tmp_path: Path) -> None:
    empty = jsonl(tmp_path / "e.jsonl", [CLAUDE[0], {"type": "user", "message": {"x": 1}}])
    code, _, err = run(tmp_path, str(empty))
    assert code == 2 and "no messages found in this claude-code file; nothing imported" in err
    assert "line 2: a message without content (skipped)" in err
    assert not list((tmp_path / "sessions").glob("*.md"))
    for name, content in (("empty.jsonl", b""), ("blank.md", b"\xef\xbb\xbf \n\n\t\n")):
        (tmp_path / name).write_bytes(content)
        code, _, err = run(tmp_path, str(tmp_path / name))
        assert code == 2 and f"{name} is empty: nothing to import" in err, err
    code, _, err = run(tmp_path, str(tmp_path / "missing.jsonl"))
    assert code == 2 and "cannot read" in err
    code, _, err = run(tmp_path, str(tmp_path))
    assert code == 2 and "not a regular file" in err
    code, _, err = run(tmp_path, str(jsonl(tmp_path / "c.jsonl", CLAUDE)), "--agent", "nobody")
    assert code == 2 and "unknown agent 'nobody'" in err


def test_huge_lines_are_cut_and_reported_lines_capped(tmp_path: Path) -> None:
    rows: list[object] = [{"type": "user", "message": {"role": "user", "content": "x" * 3_000_000}},
                          {"type": "assistant", "message": {"role": "assistant", "content": "ok"}}]
    source = jsonl(tmp_path / "big.jsonl", rows, {i: "garbage" for i in range(1, 40)})
    code, _, err = run(tmp_path, str(source), "--local-summary")
    assert code == 0 and err.count("not JSON (skipped)") == 20 and "19 more lines skipped" in err
    [turn] = parse(only_session(tmp_path).read_text()).turns
    assert len(turn.user) < 1_100_000 and turn.user.endswith("[…cut at import]")


def test_an_imported_session_resumes(tmp_path: Path) -> None:
    source = jsonl(tmp_path / "s.jsonl", CLAUDE)
    code, _, err = run(tmp_path, str(source))
    assert code == 0, err
    session_id = only_session(tmp_path).stem
    result = run_piped(tmp_path, "what did we decide about the cache?\nexit\n",
                       "--config", "rollchat.yml", "--resume", session_id,
                       env=clean_env(tmp_path / "home"))
    assert result.returncode == 0, result.stderr
    assert "redis" in result.stdout
    child = next(p for p in (tmp_path / "sessions").glob("*.md") if p.stem != session_id)
    assert parse(child.read_text()).header.resumed_from == session_id


def test_a_label_inside_a_code_block_is_code_not_the_next_message(tmp_path: Path) -> None:
    """An answer showing a chat template in a fenced block stays one answer."""
    source = tmp_path / "chat.md"
    answer = ("Here is the template:\n\n````markdown\n## User\n{question}\n```\n## Assistant\n"
              "```\n{answer}\n````\n\nand a tilde block:\n\n~~~\n**User:** not a message\n~~~")
    source.write_text(f"## User\nShow me a chat template.\n\n## Assistant\n{answer}\n\n"
                      "## User\nthanks\n\n## Assistant\nYou're welcome.\n", encoding="utf-8")
    code, _, err = run(tmp_path, str(source))
    assert code == 0, err
    t = parse(only_session(tmp_path).read_text())
    assert [(x.user, x.assistant) for x in t.turns] == [
        ("Show me a chat template.", answer), ("thanks", "You're welcome.")]


def test_codex_apply_patch_and_local_shell_calls_are_kept(tmp_path: Path) -> None:
    """Newer Codex files edit files with the freeform apply_patch (custom_tool_call) and run
    commands with local_shell_call: what was changed is what a resumed session needs."""
    patch = "*** Begin Patch\n*** Update File: src/app.py\n-old\n+new\n*** End Patch"

    def item(payload: dict[str, object]) -> dict[str, object]:
        return {"timestamp": "2025-10-29T01:00:00Z", "type": "response_item",
                "payload": payload}

    rows: list[object] = [
        item({"type": "message", "role": "user",
              "content": [{"type": "input_text", "text": "rename old to new in app.py"}]}),
        item({"type": "reasoning", "summary": [], "encrypted_content": "xyz"}),
        item({"type": "local_shell_call", "call_id": "sh1", "status": "completed",
              "action": {"type": "exec", "command": ["grep", "-n", "old", "src/app.py"]}}),
        item({"type": "function_call_output", "call_id": "sh1",
              "output": '{"output":"3:old","metadata":{"exit_code":0}}'}),
        item({"type": "custom_tool_call", "status": "completed", "call_id": "p1",
              "name": "apply_patch", "input": patch}),
        item({"type": "custom_tool_call_output", "call_id": "p1",
              "output": "Success. Updated the following files:\nM src/app.py"}),
        item({"type": "message", "role": "assistant",
              "content": [{"type": "output_text", "text": "Renamed it."}]}),
    ]
    code, _, err = run(tmp_path, str(jsonl(tmp_path / "rollout-x.jsonl", rows)))
    assert code == 0, err
    [turn] = parse(only_session(tmp_path).read_text()).turns
    shell, edit = turn.tools
    assert shell.call.name == "local_shell"
    assert shell.call.arguments["command"] == ["grep", "-n", "old", "src/app.py"]
    assert "3:old" in shell.result
    assert edit.call.name == "apply_patch" and edit.call.arguments == {"input": patch}
    assert edit.result.endswith("M src/app.py")
    assert turn.assistant == "Renamed it."


def test_the_same_file_twice_is_refused_unless_again(tmp_path: Path) -> None:
    source = jsonl(tmp_path / "s.jsonl", CLAUDE, {4: "not json at all"})
    code, _, err = run(tmp_path, str(source), "--local-summary")
    assert code == 0, err
    first = only_session(tmp_path)
    imported_from = parse(first.read_text()).header.imported_from or ""
    when = imported_from.rsplit("imported ", 1)[1].rstrip(")")
    code, out, err = run(tmp_path, str(source), "--local-summary")
    assert code == 1 and out == ""
    assert (f"{source} was already imported as {first.stem} (on {when}); use --again to "
            "import it anew") in err
    assert "line 4" not in err  # refused before its lines are reported
    assert only_session(tmp_path) == first  # nothing written
    copy = tmp_path / "elsewhere.jsonl"  # the same bytes under another name: the same file
    copy.write_bytes(source.read_bytes())
    code, _, err = run(tmp_path, str(copy), "--local-summary")
    assert code == 1 and f"already imported as {first.stem}" in err
    code, out, err = run(tmp_path, str(source), "--local-summary", "--again")
    assert code == 0, err
    [second] = [p for p in (tmp_path / "sessions").glob("*.md") if p != first]
    assert f"as session {second.stem}" in out
    code, _, err = run(tmp_path, str(source), "--local-summary")
    assert code == 1 and "already imported as " in err
    changed = jsonl(tmp_path / "s.jsonl", CLAUDE)  # other bytes: another file
    code, _, err = run(tmp_path, str(changed), "--local-summary")
    assert code == 0, err
