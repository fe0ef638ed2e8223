"""``rollchat import`` on session files the real tools wrote (tests/fixtures/real, see its
PROVENANCE.md): every count is taken from the source file by a rule of its own, written here
over the raw JSON or markdown, never from what the importer is expected to do."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from rollchat.cli.app import build_cli
from rollchat.domain import Text, ToolResult, ToolUse, Turn
from rollchat.storage.imports import Imported, read_transcript
from rollchat.storage.titles import first_line_title
from rollchat.storage.transcript import parse
from rollchat.text.normalize import clean

REAL = Path(__file__).parent.parent / "fixtures" / "real"
CLAUDE = sorted((REAL / "claude-code").glob("*.jsonl"))
SIDE_CHAINS = sorted((REAL / "claude-code" / "subagents").glob("*.jsonl"))
CODEX = sorted((REAL / "codex").glob("*.jsonl"))
SERVERS = ("llama_cpp", "ollama", "vllm")  # model servers' bytes (wire_local.py): no sessions
EVERY = sorted(p for p in REAL.rglob("*") if p.is_file() and p.name != "PROVENANCE.md"
               and p.relative_to(REAL).parts[0] not in SERVERS)
# what no prompt the user typed and no title may hold: the tools' own markup
MARKUP = ("<command-name>", "<command-message>", "<command-args>", "<local-command-",
          "<system-reminder>", "<task-notification>", "<task-id>", "[Request interrupted",
          "Caveat: The messages below", "This session is being continued",
          "Base directory for this skill", "<environment_context>", "<user_instructions>",
          "# AGENTS.md instructions for", "<permissions instructions>", "<bash-input>")


def rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").split("\n")
            if line.strip()]


def imported(path: Path) -> Imported:
    return read_transcript(path.read_bytes(), path.name)


# ------------------------------------------------------------------ Claude Code, from the source


@dataclass
class ClaudeSource:
    """What a Claude Code file holds, counted over its raw lines."""

    prompts: list[tuple[str, str]] = field(default_factory=list)  # (first line, time)
    calls: int = 0
    results: int = 0
    errors: int = 0
    thinking: int = 0
    side_lines: int = 0
    compactions: int = 0
    interruptions: int = 0
    skills: int = 0
    commands: int = 0
    tasks: int = 0
    summary: str | None = None


def _texts(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(b.get("text", "") for b in content
                     if isinstance(b, dict) and b.get("type") == "text")


def _messages(lines: list[dict[str, Any]], side_chain: bool) -> Iterator[dict[str, Any]]:
    """The user, assistant and local-command lines of the main chain (or of a side chain)."""
    for row in lines:
        if row.get("type") == "system" and row.get("subtype") == "local_command":
            yield {"type": "user", "message": {"content": row.get("content", "")},
                   "timestamp": row.get("timestamp")}
        elif row.get("type") in ("user", "assistant") and \
                bool(row.get("isSidechain")) == side_chain:
            yield row


def claude_source(path: Path) -> ClaudeSource:
    lines = rows(path)
    talk = [r for r in lines if r.get("type") in ("user", "assistant")]
    side_chain = all(r.get("isSidechain") for r in talk)
    src = ClaudeSource(side_lines=0 if side_chain else sum(1 for r in talk
                                                             if r.get("isSidechain")))
    src.summary = next((r["summary"] for r in lines if r.get("type") == "summary"), None)
    chain = list(_messages(lines, side_chain))
    for i, row in enumerate(chain):
        content = row["message"].get("content")
        if row["type"] == "assistant":
            blocks = content if isinstance(content, list) else []
            src.calls += sum(1 for b in blocks if b.get("type") == "tool_use")
            src.thinking += sum(1 for b in blocks if b.get("type") == "thinking")
            continue
        if isinstance(content, list):
            results = [b for b in content if b.get("type") == "tool_result"]
            src.results += len(results)
            src.errors += sum(1 for b in results if b.get("is_error") is True)
        text = re.sub(r"<system-reminder>.*?</system-reminder>", "", _texts(content),
                      flags=re.S).strip()
        if row.get("isCompactSummary"):
            src.compactions += 1
        elif row.get("isMeta"):
            src.skills += text.startswith("Base directory for this skill")
        elif "<command-name>" in text:
            src.commands += 1
            after = next((r for r in chain[i + 1:] if r["type"] == "assistant" or
                          _texts(r["message"].get("content")).strip()), None)
            if after is not None and (after["type"] == "assistant" or (
                    after.get("isMeta") and "Caveat:" not in _texts(after["message"]["content"]))):
                src.prompts.append((f"{text}", row.get("timestamp", "")))  # a prompt command
        elif text.startswith("[Request interrupted"):
            src.interruptions += 1
        elif "<task-notification>" in text:
            src.tasks += 1
        elif text and not text.startswith(("<local-command", "<bash-", "Caveat:")):
            src.prompts.append((text, row.get("timestamp", "")))
    return src


def queries(turns: list[Turn]) -> list[Turn]:
    """The turns that hold a prompt (a file may open with the model speaking: no prompt)."""
    return [t for t in turns if t.user]


@pytest.mark.parametrize("path", CLAUDE + SIDE_CHAINS, ids=lambda p: p.name)
def test_claude_code_one_turn_per_typed_prompt(path: Path) -> None:
    src, got = claude_source(path), imported(path)
    asked = queries(got.turns)
    assert len(asked) == len(src.prompts)
    assert len(got.turns) - len(asked) <= 1 and all(t.user for t in got.turns[1:])
    for turn, (text, when) in zip(asked, src.prompts, strict=True):
        if "<command-name>" not in text:
            assert turn.user == clean(text)
        else:  # a slash command that asked the model: its prompt is the command as typed
            assert turn.user.startswith("/") and turn.user.split()[0] in text
        assert turn.started.isoformat().replace("+00:00", "Z")[:19] == when[:19]
        assert not any(mark in turn.user for mark in MARKUP), turn.user[:200]


@pytest.mark.parametrize("path", CLAUDE + SIDE_CHAINS, ids=lambda p: p.name)
def test_claude_code_tool_calls_results_and_errors_are_all_kept(path: Path) -> None:
    src, got = claude_source(path), imported(path)
    blocks = [b for t in got.turns for b in t.blocks]
    assert sum(1 for b in blocks if isinstance(b, ToolUse)) == src.calls
    results = [b for b in blocks if isinstance(b, ToolResult)]
    assert len(results) == src.results
    assert sum(1 for b in results if b.is_error) == src.errors


@pytest.mark.parametrize("path", CLAUDE + SIDE_CHAINS, ids=lambda p: p.name)
def test_claude_code_own_lines_are_folded_and_counted(path: Path) -> None:
    src, got = claude_source(path), imported(path)
    assert got.folded["compaction summary"] == src.compactions
    assert got.folded["interruption"] == src.interruptions
    assert got.folded["skill body"] == src.skills
    assert got.folded["slash command"] == src.commands
    assert got.folded["task notification"] == src.tasks
    assert got.left_out["thinking block"] == src.thinking
    assert got.left_out["sub-agent line"] == src.side_lines


@pytest.mark.parametrize("path", CLAUDE + SIDE_CHAINS, ids=lambda p: p.name)
def test_claude_code_title_is_its_summary_line_or_first_prompt(path: Path) -> None:
    src, got = claude_source(path), imported(path)
    if src.summary is not None:
        assert got.title == src.summary
    else:
        first = got.turns[0].user if got.turns[0].user else got.turns[1].user
        assert got.title == first_line_title(first)
    assert got.title and not any(mark in got.title for mark in MARKUP)


def test_a_side_chain_file_imports_as_the_sub_agents_conversation() -> None:
    for path in SIDE_CHAINS:
        got = imported(path)
        agent = next(r["agentId"] for r in rows(path) if r.get("agentId"))
        assert got.side_chain == agent and got.turns, path.name
    main = imported(REAL / "claude-code" / "5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl")
    assert main.side_chain is None and main.left_out["sub-agent line"] == 22


# ------------------------------------------------------------------ Codex, from the source


def codex_items(path: Path) -> list[dict[str, Any]]:
    """The response items of a rollout, either generation (with or without the envelope)."""
    items = []
    for row in rows(path):
        if row.get("type") == "response_item":
            items.append(row["payload"])
        elif "payload" not in row and ("role" in row or row.get("type") in (
                "function_call", "function_call_output", "custom_tool_call",
                "custom_tool_call_output", "local_shell_call", "reasoning")):
            items.append(row)
    return items


def codex_prompts(path: Path) -> list[str]:
    """What the user typed: Codex's own record of it (``event_msg`` user_message) in newer
    files; in older ones, the user messages that are not its preambles."""
    events = [r["payload"]["message"] for r in rows(path) if r.get("type") == "event_msg"
              and r["payload"].get("type") == "user_message"]
    if events:
        return events
    preambles = ("<environment_context>", "<user_instructions>", "# AGENTS.md instructions")
    return [b["text"] for item in codex_items(path) if item.get("role") == "user"
            for b in item["content"] if not b["text"].lstrip().startswith(preambles)]


@pytest.mark.parametrize("path", CODEX, ids=lambda p: p.name)
def test_codex_one_turn_per_typed_prompt_in_both_generations(path: Path) -> None:
    got = imported(path)
    typed = codex_prompts(path)
    assert [t.user for t in got.turns] == [clean(p).strip() for p in typed]
    assert not any(mark in (got.title or "") for mark in MARKUP)
    assert got.title == first_line_title(typed[0])
    items = codex_items(path)
    calls = sum(1 for i in items if i.get("type") in ("function_call", "custom_tool_call",
                                                      "local_shell_call"))
    assert sum(len(t.tools) for t in got.turns) == calls
    assert got.left_out["thinking block"] == sum(1 for i in items if i.get("type") == "reasoning")
    answers = [b["text"] for i in items if i.get("role") == "assistant" for b in i["content"]]
    assert "\n\n".join(t.assistant for t in got.turns) == "\n\n".join(clean(a) for a in answers)


def test_the_two_codex_generations_are_both_there() -> None:
    old = rows(REAL / "codex" / "codex-session-viewer-example.jsonl")
    assert "instructions" in old[0] and not any("payload" in r for r in old)
    new = rows(REAL / "codex" / "ai-sessions-codex-pomodor-timer.jsonl")
    assert new[0]["type"] == "session_meta"
    got = imported(REAL / "codex" / "codex-session-viewer-example.jsonl")
    assert got.folded["AGENTS.md instructions"] == 1 and got.turns[0].started.year == 2025


# ------------------------------------------------------------------ gemini-cli, aider, llm


def test_gemini_cli_session() -> None:
    path = REAL / "gemini-cli" / "ai-sessions-gemini-cli-pomodoro-timer.json"
    session = json.loads(path.read_text(encoding="utf-8"))
    got = imported(path)
    users = [m for m in session["messages"] if m["type"] == "user"]
    assert [(t.user, t.started.isoformat()[:19]) for t in got.turns] == [
        (clean(m["content"]), m["timestamp"][:19]) for m in users]
    calls = [c for m in session["messages"] for c in m.get("toolCalls", [])]
    exchanges = [ex for t in got.turns for ex in t.tools]
    assert [ex.call.id for ex in exchanges] == [c["id"] for c in calls]
    assert got.left_out["thinking block"] == sum(len(m.get("thoughts", []))
                                                 for m in session["messages"])
    replies = [clean(m["content"]) for m in session["messages"]
               if m["type"] == "gemini" and m["content"].strip()]
    assert "\n\n".join(t.assistant for t in got.turns) == "\n\n".join(replies)
    # how long each turn took: from the prompt to the last reply before the next prompt
    starts = [n for n, m in enumerate(session["messages"]) if m["type"] == "user"]
    took = [(datetime.fromisoformat(session["messages"][end - 1]["timestamp"])
             - datetime.fromisoformat(session["messages"][start]["timestamp"])).total_seconds()
            for start, end in zip(starts, [*starts[1:], len(session["messages"])], strict=True)]
    assert [t.elapsed for t in got.turns] == pytest.approx(took)


def aider_prompts(text: str) -> list[str]:
    """The runs of ``#### `` lines, each one message the user typed (in-chat commands that do
    not ask the model left out)."""
    runs = re.findall(r"(?:^####.*\n)+", text, flags=re.M)
    typed = ["\n".join(line[5:].rstrip() for line in run.rstrip("\n").split("\n")).strip()
             for run in runs]
    return [t for t in typed if t and (not t.startswith("/") or t.startswith("/ask"))]


@pytest.mark.parametrize("name", ["metadata-aider.aider.chat.history.md"])
def test_aider_chat_history(name: str) -> None:
    path = REAL / "aider" / name
    text = path.read_text(encoding="utf-8")
    got = imported(path)
    assert [t.user for t in got.turns] == aider_prompts(text)
    own = re.findall(r"(?:^> .*  \n|^>[ ]*\n)+", text, flags=re.M)  # aider ends its lines "  "
    assert got.folded["aider output block"] == len(own)
    assert all("Tokens:" not in t.assistant for t in got.turns)  # aider's lines are notes


def test_an_aider_history_of_nothing_but_commands_is_refused_saying_what_it_holds(
        tmp_path: Path) -> None:
    path = REAL / "aider" / "zen-mcp-server.aider.chat.history.md"
    assert aider_prompts(path.read_text(encoding="utf-8")) == []
    code, _, err = run_cli(tmp_path, "import", str(path))
    assert code == 2 and "no messages found in this aider file" in err
    assert "aider commands" in err and "nothing imported" in err


def test_llm_logs_json() -> None:
    path = REAL / "llm" / "llm-logs.json"
    entries = json.loads(path.read_text(encoding="utf-8"))
    got = imported(path)
    assert [t.user for t in got.turns] == [clean(e["prompt"]) for e in entries if e["prompt"]]
    exchanges = [ex for t in got.turns for ex in t.tools]
    calls = [c for e in entries for c in e["tool_calls"]]
    results = {r["tool_call_id"]: r["output"] for e in entries for r in e["tool_results"]}
    assert [(ex.call.name, ex.result) for ex in exchanges] == [
        (c["name"], results[c["tool_call_id"]]) for c in calls]
    assert got.folded["conversation start"] == len({e["conversation_id"] for e in entries})


def test_a_markdown_export() -> None:
    path = REAL / "markdown" / "claude-conversation-2025-11-20-ef0ca137.md"
    text = path.read_text(encoding="utf-8")
    got = imported(path)
    assert len(got.turns) == text.count("\n## 👤 User\n")
    assert got.turns[0].started.isoformat()[:19] == "2025-11-20T00:48:03"


# ------------------------------------------------------------------ through the CLI, then audit


def run_cli(tmp_path: Path, *args: str) -> tuple[int, str, str]:
    config = tmp_path / "rollchat.yml"
    config.write_text("agents:\n  assistant:\n    provider: offline\n", encoding="utf-8")
    result = CliRunner().invoke(build_cli(), [*args, "--sessions-dir", str(tmp_path / "s"),
                                              "--config", str(config)])
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize("path", [p for p in EVERY if "zen-mcp" not in p.name],
                         ids=lambda p: p.name)
def test_every_real_file_imports_from_the_cli_and_passes_its_audit(tmp_path: Path,
                                                                   path: Path) -> None:
    code, out, err = run_cli(tmp_path, "import", str(path), "--local-summary")
    assert code == 0, err
    got = imported(path)
    assert ("Folded the tool's own lines" in out) == bool(got.folded)
    assert ("Left out: " in out) == bool(got.left_out)
    session_id = re.search(r"as session (\S+?),", out)[1]  # type: ignore[index]
    code, report, err = run_cli(tmp_path, "audit", session_id)
    assert code == 0, report + err
    saved = parse((tmp_path / "s" / f"{session_id}.md").read_text(encoding="utf-8"))
    assert len(saved.turns) == len(got.turns)
    assert [t.notes for t in saved.turns] == [t.notes for t in got.turns]  # kept in the file
    assert turn_sequence(list(saved.turns)) == turn_sequence(got.turns)
    assert saved.header.title == got.title
    assert saved.summary is not None
    summary = "\n".join([saved.summary.background, *saved.summary.topics,
                         *saved.summary.decisions, *saved.summary.pending])
    assert not any(mark in summary for mark in MARKUP), summary[:500]


# ------------------------------------------------------------------ blocks in the order they came


def claude_sequence(path: Path) -> list[str]:
    """The model's texts, tool calls and results of a Claude Code file in file order, as
    ``T:<text>`` / ``U:<id>`` / ``R:<id>:<error>``, texts that follow each other joined."""
    lines = rows(path)
    talk = [r for r in lines if r.get("type") in ("user", "assistant")]
    side_chain = all(r.get("isSidechain") for r in talk)
    seq: list[str] = []
    for row in _messages(lines, side_chain):
        content = row["message"].get("content")
        if row["type"] == "assistant":
            blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
            for b in blocks:
                if b.get("type") == "text" and b["text"].strip():
                    seq.append("T:" + clean(b["text"]))
                elif b.get("type") == "tool_use":
                    seq.append(f"U:{b['id']}")
        elif isinstance(content, list):
            seq += [f"R:{b['tool_use_id']}:{b.get('is_error') is True}" for b in content
                    if b.get("type") == "tool_result"]
    return _joined(seq)


def _joined(seq: list[str]) -> list[str]:
    """Texts that follow each other joined; the results that follow each other in the order
    of their calls (a transcript pairs a round's results with its calls by position)."""
    out: list[str] = []
    calls = {item[2:]: n for n, item in enumerate(seq) if item.startswith("U:")}
    for item in seq:
        if item.startswith("T:") and out and out[-1].startswith("T:"):
            out[-1] += "\n\n" + item[2:]
        else:
            out.append(item)
    runs: list[str] = []
    for item in out:
        at = len(runs)
        while item.startswith("R:") and at > 0 and runs[at - 1].startswith("R:") and \
                calls.get(runs[at - 1].split(":")[1], -1) > calls.get(item.split(":")[1], -1):
            at -= 1
        runs.insert(at, item)
    return runs


def turn_sequence(turns: list[Turn]) -> list[str]:
    seq: list[str] = []
    for turn in turns:
        for b in turn.blocks:
            if isinstance(b, Text):
                seq.append("T:" + b.text)
            elif isinstance(b, ToolUse):
                seq.append(f"U:{b.call.id}")
            elif isinstance(b, ToolResult):
                seq.append(f"R:{b.call_id}:{b.is_error}")
    return _joined(seq)


@pytest.mark.parametrize("path", CLAUDE + SIDE_CHAINS, ids=lambda p: p.name)
def test_claude_code_texts_calls_and_results_keep_their_order(path: Path) -> None:
    """Every text, call and result (with its error flag) in the order the file has them."""
    assert turn_sequence(imported(path).turns) == claude_sequence(path)


@pytest.mark.parametrize("path", CLAUDE, ids=lambda p: p.name)
def test_claude_code_notes_stand_where_the_lines_were(path: Path) -> None:
    """Each of the tool's own lines that matters is a note in a turn, its markup gone."""
    got, src = imported(path), claude_source(path)
    notes = [n for t in got.turns for n in t.notes]
    assert sum(1 for n in notes if n.kind == "compaction") == src.compactions
    assert sum(1 for n in notes if n.kind == "interrupted") == src.interruptions
    assert sum(1 for n in notes if n.kind == "skill") == src.skills
    assert sum(1 for n in notes if n.kind == "command") == src.commands
    for turn in got.turns:
        assert not any(mark in n.text for n in turn.notes for mark in ("<command-", "<local-"))


@pytest.mark.parametrize("path", CODEX, ids=lambda p: p.name)
def test_codex_texts_calls_and_results_keep_their_order(path: Path) -> None:
    seq: list[str] = []
    for item in codex_items(path):
        kind = item.get("type", "message")
        if kind == "message" and item.get("role") == "assistant":
            seq += ["T:" + clean(b["text"]) for b in item["content"] if b["text"].strip()]
        elif kind in ("function_call", "custom_tool_call", "local_shell_call"):
            seq.append(f"U:{item.get('call_id') or item.get('id')}")
        elif kind in ("function_call_output", "custom_tool_call_output"):
            seq.append(f"R:{item['call_id']}:False")
    assert turn_sequence(imported(path).turns) == _joined(seq)


def test_gemini_cli_texts_calls_and_results_keep_their_order() -> None:
    path = REAL / "gemini-cli" / "ai-sessions-gemini-cli-pomodoro-timer.json"
    seq: list[str] = []
    for m in json.loads(path.read_text(encoding="utf-8"))["messages"]:
        if m["type"] == "gemini":
            seq += ["T:" + clean(m["content"])] if m["content"].strip() else []
            for c in m.get("toolCalls", []):
                seq += [f"U:{c['id']}", f"R:{c['id']}:{c['status'] != 'success'}"]
    assert turn_sequence(imported(path).turns) == _joined(seq)
