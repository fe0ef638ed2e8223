"""Session files written by earlier versions of rollchat keep opening: parsed by today's parser,
listed, shown, exported, audited (or summarized) and resumed through the CLI. The files are in
tests/fixtures/formats/ (a folder per commit, made by that commit's own code: make.py, README)."""

from __future__ import annotations

import functools
import json
import re
import shutil
from pathlib import Path

import click
import pytest
import typer
from click.testing import CliRunner

from rollchat.cli.app import build_cli
from rollchat.domain import Text, ToolResult, ToolUse, Transcript
from rollchat.storage.transcript import parse, render

FORMATS = Path(__file__).resolve().parents[1] / "fixtures" / "formats"
COMMITS = sorted(p.name for p in FORMATS.iterdir() if p.is_dir() and p.name != "__pycache__")
# The generations that write a turn's blocks in the order they happened (issue 23 on): texts
# between tool calls, each a field of its own.
BLOCKS = frozenset({"eb5d70b"})
FILES = sorted(p for commit in COMMITS for p in (FORMATS / commit).glob("*.md"))

# What the file's own text says, read without the parser: the structural lines are written by
# the renderer at the start of a line; content that looks like them carries a leading backslash.
_QUERY = re.compile(r"^## Query [0-9]+ \([0-9:]{8}\)$", re.MULTILINE)
_CARRIED = re.compile(r"^## Carried Over [0-9]+ \([0-9:]{8}\)$", re.MULTILINE)
_RESTORED = re.compile(r"^## Session Restored \([0-9:]{8}\)$", re.MULTILINE)
_HANDED = re.compile(r"^## Handed Off \([0-9:]{8}\)$", re.MULTILINE)
_TOOL_CALL = re.compile(r"^\*Tool call:\* (.+)$", re.MULTILINE)
_INTERRUPTED = re.compile(r"^\*\[interrupted by user\]\*$", re.MULTILINE)
_UNANSWERED = re.compile(r"^\*\[not answered(?:: .*)?\]\*$", re.MULTILINE)
_SUMMARY = "\n<!-- SESSION_SUMMARY_START -->\n"
_STRUCTURE = re.compile(r"\\*(?:#|\*\*|\*[^ *\t]|---|<!--)")


def _id(path: Path) -> str:
    return f"{path.parent.name}/{path.stem}"


def _header_field(text: str, name: str) -> str | None:
    head = text.split("\n---\n", 1)[0]
    found = re.search(rf"^\*\*{name}:\*\* (.*)$", head, re.MULTILINE)
    return None if found is None else found[1].strip()


def _escaped(line: str) -> str:
    """A content line as the renderer writes it (one backslash before structure-like lines)."""
    return "\\" + line if _STRUCTURE.match(line) else line


def _held_at(text: str, first_prefix: str, value: str) -> bool:
    """``value`` is in ``text`` as written: its first line after ``first_prefix`` at the start
    of a line, the rest on the lines that follow."""
    lines = value.split("\n")
    block = "\n".join([first_prefix + _escaped(lines[0]), *map(_escaped, lines[1:])])
    return f"\n{block}\n" in text


@pytest.fixture(params=FILES, ids=_id)
def old_file(request: pytest.FixtureRequest) -> Path:
    path: Path = request.param
    return path


def test_every_generation_is_there() -> None:
    # one folder per format generation (README.md): the oldest, Carried Over, Tokens Billed,
    # Tools, handoff, Cost with the context block, Title
    assert len(COMMITS) >= 7, COMMITS
    for commit in COMMITS:
        assert list((FORMATS / commit).glob("*.md")), commit


def test_parsed_turns_match_the_files_own_text(old_file: Path) -> None:
    text = old_file.read_text(encoding="utf-8")
    t = parse(text)
    h = t.header
    assert h.session_id == old_file.stem == _header_field(text, "Session ID")
    assert str(h.total_queries) == _header_field(text, "Total Queries")
    billed = _header_field(text, "Tokens Billed") or _header_field(text, "Total Tokens")
    assert str(h.total_tokens) == billed
    assert h.context_tokens == int(_header_field(text, "Context Tokens") or 0)
    assert h.resumed_from == _header_field(text, "Resumed From")
    assert h.handed_from == _header_field(text, "Handed From")
    assert h.title == _header_field(text, "Title")
    tools = _header_field(text, "Tools")
    assert h.tools == (None if tools is None else tuple(tools.split(", ")))
    kinds = [turn.kind for turn in t.turns]
    assert kinds.count("query") == len(_QUERY.findall(text))
    assert kinds.count("carried") == len(_CARRIED.findall(text))
    assert kinds.count("restored") == len(_RESTORED.findall(text))
    assert kinds.count("handoff") == len(_HANDED.findall(text))
    assert len(t.turns) == sum(len(r.findall(text)) for r in (_QUERY, _CARRIED, _RESTORED,
                                                              _HANDED))
    calls = [ex.call for turn in t.turns for ex in turn.tools]
    assert [c.name for c in calls] == _TOOL_CALL.findall(text)
    for turn in t.turns:
        for ex in turn.tools:
            # (an error result: "*Result (error):*" since the block turns)
            assert _held_at(text, "*Result:* ", ex.result) or _held_at(
                text, "*Result (error):* ", ex.result), (ex.call.name, ex.result)
            assert f"\n*Call ID:* {ex.call.id}\n" in text
            assert f"\n*Arguments:* {json.dumps(dict(ex.call.arguments))}\n" in text
        if turn.kind in ("query", "carried"):
            assert _held_at(text, "**You:** ", turn.user), turn.user
        if turn.assistant and old_file.parent.name in BLOCKS:  # each text a field of its own
            for b in turn.blocks:
                assert not isinstance(b, Text) or _held_at(text, f"**{t.header.agent}:** ",
                                                           b.text), b
        elif turn.assistant:
            assert _held_at(text, f"**{t.header.agent}:** ", turn.assistant), turn.assistant
    for turn in t.turns:
        if old_file.parent.name in BLOCKS:
            continue
        # a file written before blocks: each call with its result right after it, the answer's
        # text last (one text: the old format kept the answer in one field)
        n = sum(isinstance(b, ToolUse) for b in turn.blocks)
        assert len(turn.blocks) >= 2 * n, turn.blocks
        for use, result in zip(turn.blocks[:2 * n:2], turn.blocks[1:2 * n:2], strict=True):
            assert isinstance(use, ToolUse) and isinstance(result, ToolResult), turn.blocks
            assert result.call_id == use.call.id
        texts = turn.blocks[2 * n:]
        assert texts == ((Text(turn.assistant),) if turn.assistant else ()), texts
        assert turn.kind != "handoff" or turn.blocks == ()
    statuses = [turn.status for turn in t.turns]
    assert statuses.count("interrupted") == len(_INTERRUPTED.findall(text))
    assert statuses.count("unanswered") == len(_UNANSWERED.findall(text))
    assert (t.summary is not None) == (_SUMMARY in text)
    # written again in today's format (a rewrite: title, summary edit), it reads back the same
    assert parse(render(t)) == t


def _sessions(tmp_path: Path, commit: str) -> Path:
    sessions = tmp_path / "sessions"
    shutil.copytree(FORMATS / commit, sessions, ignore=shutil.ignore_patterns("*.txt", "*.py"))
    return sessions


@functools.cache
def _command() -> click.Command:
    """The CLI as click runs it, built once (typer builds it anew on every invoke)."""
    return typer.main.get_command(build_cli())


def _cli(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, *args: str,
         stdin: str | None = None) -> tuple[int, str]:
    """The CLI in this process (HOME, XDG dirs and no API keys: tests/conftest.py): its exit
    status and what it wrote (stdout alone when it succeeded, else stdout and stderr)."""
    monkeypatch.chdir(tmp_path)
    config = tmp_path / "rollchat.yml"
    config.write_text("ui:\n  offline_word_delay: 0\n", encoding="utf-8")
    result = CliRunner().invoke(_command(), [*args, "--config", str(config), "--sessions-dir",
                                              str(tmp_path / "sessions")], input=stdin)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout if result.exit_code == 0 else result.output


def _expected(path: Path) -> Transcript:
    return parse(path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("commit", COMMITS)
def test_list_show_export_and_audit_open_every_file(commit: str, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    sessions = _sessions(tmp_path, commit)
    code, out = _cli(monkeypatch, tmp_path, "sessions", "--all", "--json")
    assert code == 0, out
    listing = json.loads(out)
    assert listing["problems"] == []
    listed = {row["id"]: row for row in listing["sessions"]}
    assert sorted(listed) == sorted(p.stem for p in sessions.glob("*.md"))
    for sid, row in listed.items():
        text = (sessions / f"{sid}.md").read_text(encoding="utf-8")
        # a finished session's header says how many; a killed one's header may lag behind
        # (none before 75ead06 refreshed it), so its queries are counted in its turns
        queries = (_header_field(text, "Total Queries") if _SUMMARY in text
                   else str(len(_QUERY.findall(text))))
        assert str(row["queries"]) == queries
        assert row["parent"] == _header_field(text, "Resumed From")
        assert row["has_summary"] == (_SUMMARY in text) and row["summary_problem"] is None
    for path in sorted(sessions.glob("*.md")):
        sid, text = path.stem, path.read_text(encoding="utf-8")
        code, out = _cli(monkeypatch, tmp_path, "show", sid)
        assert code == 0, out
        assert sid in out and "Traceback" not in out
        for turn in _expected(path).turns:
            if turn.kind == "query":
                assert turn.user.split("\n")[0][:40] in out
        code, out = _cli(monkeypatch, tmp_path, "export", sid, "--format", "json")
        assert code == 0, out
        doc = json.loads(out)
        turns = doc["turns"]
        assert doc["session"]["id"] == sid
        assert [x["kind"] for x in turns].count("query") == len(_QUERY.findall(text))
        tools = [m for x in turns for m in x["messages"] if m["role"] == "tool"]
        assert [m["name"] for m in tools] == _TOOL_CALL.findall(text)
        for m in tools:
            assert _held_at(text, "*Result:* ", m["text"]) or _held_at(
                text, "*Result (error):* ", m["text"]), m
        for x in turns:  # the typed blocks: each call, its result, then the text
            kinds = [b["type"] for b in x["blocks"]]
            calls = kinds.count("tool_call")
            answer = [m["text"] for m in x["messages"] if m["role"] == "assistant"]
            if commit in BLOCKS:  # the blocks in the order they happened: text between calls
                assert kinds.count("tool_result") == calls
                continue
            assert kinds == ["tool_call", "tool_result"] * calls + ["text"] * (answer != [""])
            assert [b["id"] for b in x["blocks"] if b["type"] == "tool_call"] == [
                b["call_id"] for b in x["blocks"] if b["type"] == "tool_result"]
        code, out = _cli(monkeypatch, tmp_path, "audit", sid, "--json")
        if _SUMMARY in text:
            # 1: the summary (that version's offline model's) lost a decision or an open task
            assert code in (0, 1), out
            assert set(json.loads(out)) == {"kept", "lost"}
            continue
        # a chat that was killed: nothing to audit, and its summary made from its turns
        assert code == 2 and f"{sid}.md has no summary to audit" in out, out
        code, out = _cli(monkeypatch, tmp_path, "compact", sid, "--json")
        assert code == 0, out
        assert "seed packets in the shed" in json.loads(out)["summary"]


def _turns_text(text: str) -> str:
    """The file's turns: after the header, before the summary block."""
    return text.split("\n---\n", 1)[1].split("\n<!-- SESSION_SUMMARY_START")[0]


def _resume(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, sid: str,
            stdin: str) -> str:
    # fork: this very file, even when a child continues it (--resume offers the child)
    code, out = _cli(monkeypatch, tmp_path, "--provider", "offline", "--yes", "fork", sid,
                     stdin=stdin)
    assert code == 0, out
    assert "Traceback" not in out and sid in out, out
    return out


@pytest.mark.parametrize("commit", COMMITS)
def test_resume_every_file_of_a_generation(commit: str, tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    sessions = _sessions(tmp_path, commit)
    for path in sorted(sessions.glob("*.md")):
        out = " ".join(_resume(monkeypatch, tmp_path, path.stem, "exit\n").split())
        # the offline model acknowledges the summary it was given: the old file's own, or for
        # a chat that was killed, the one made from its turns
        assert "I've reviewed the summary of our previous session." in out
        summary = _expected(path).summary
        if summary is None:
            assert "seed packets in the shed" in out
        elif summary.topics:
            assert f"Main topics: {summary.topics[0].rstrip('.')}" in out


@pytest.mark.parametrize("commit", COMMITS)
def test_a_question_about_a_resumed_old_file_reads_it(commit: str, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """After resuming, a question about the old session is answered by today's archive tool
    reading the old file: the files whose turns hold tool calls and the word asked about (its
    turns found), and the one typed in a terminal (none found)."""
    sessions = _sessions(tmp_path, commit)
    texts = {p: p.read_text(encoding="utf-8") for p in sorted(sessions.glob("*.md"))}
    hits = [p for p, text in texts.items()
            if "radiator" in _turns_text(text) and _TOOL_CALL.search(text)]
    misses = [p for p, text in texts.items() if "Here is my plan" in text]
    assert hits and len(misses) == 1
    for path in [*hits, *misses]:
        sid, before = path.stem, set(sessions.glob("*.md"))
        out = _resume(monkeypatch, tmp_path, sid, "What did I say earlier about the radiator?\n")
        children = [parse(p.read_text(encoding="utf-8")) for p in set(sessions.glob("*.md"))
                    - before]
        assert len(children) == 1, out
        child = children[0]
        assert child.header.resumed_from == sid
        assert child.turns[0].kind == "restored"
        summary = _expected(path).summary  # the context restored is the old file's summary
        assert summary is not None
        assert summary.background.split("\n")[0] in child.turns[0].user
        results = [ex.result for turn in child.turns for ex in turn.tools
                   if ex.call.name == "session_archive_read"]
        assert len(results) == 1, out
        if path in hits:
            assert f"matching the query (session {sid})" in results[0]
            assert "radiator" in results[0]
        else:
            assert results[0].startswith(f"No turns matching the query in session {sid} ")
