"""``rollchat import FILE``: another tool's transcript read into turns, as the person lived it.
The format is told from the content; the file is untrusted (cleaned, cut, bounded)."""

# One module per format: claude (Claude Code JSONL and its sub-agents' side-chain files), codex
# (both rollout generations), gemini (gemini-cli sessions), aider (.aider.chat.history.md), llm
# (``llm logs --json``), markdown (a chat written as markdown). Each feeds a Builder (builder.py)
# that makes one turn per prompt the user typed; the tools' own lines become notes, counted.
# A malformed line is reported by number and skipped.

from __future__ import annotations

import json
from typing import Any

from rollchat.errors import UsageError
from rollchat.storage.imports import aider, claude, codex, gemini, llm, markdown
from rollchat.storage.imports.common import Imported, json_lines
from rollchat.storage.titles import first_line_title
from rollchat.text.normalize import clean

__all__ = ["FORMATS", "SUPPORTED", "Imported", "read_transcript"]

FORMATS = ("claude-code", "codex", "gemini-cli", "aider", "llm-logs", "markdown")
SUPPORTED = ("Claude Code session files (JSONL, ~/.claude/projects), Codex session files "
             "(rollout-*.jsonl, ~/.codex/sessions), gemini-cli sessions (session-*.json, "
             "~/.gemini/tmp), aider chat histories (.aider.chat.history.md), 'llm logs --json' "
             "output, and markdown chats ('## User' / '## Assistant' sections or '**User:**' / "
             "'**Assistant:**' labels)")


def read_transcript(data: bytes, name: str) -> Imported:
    """The turns of a transcript file's ``data`` (``name``: for messages). UsageError when
    the format is none of the supported ones."""
    if b"\0" in data:
        raise UsageError(f"{name} is a binary file; rollchat import reads {SUPPORTED}")
    text = clean(data.decode("utf-8", errors="replace").removeprefix("\ufeff"))
    if not text.strip():
        raise UsageError(f"{name} is empty: nothing to import")
    out = _read(text, name)
    if out.title is None:
        out.title = next((t for t in (first_line_title(turn.user) for turn in out.turns) if t),
                         None)
    return out


def _read(text: str, name: str) -> Imported:
    head = [line for line in text.split("\n", 200)[:200] if line.strip()][:50]
    json_like = any(line.lstrip()[:1] in ("{", "[") for line in head)  # some maybe broken
    if json_like:
        found = _json(text)
        if found is not None:
            return found
    if aider.is_aider(text):
        out = Imported("aider")
        aider.read(text, out)
        return out
    if markdown.is_markdown_chat(text):
        out = Imported("markdown")
        markdown.read(text, out)
        return out
    if json_like:
        raise UsageError(f"{name}: unknown format: no line is a Claude Code or Codex message "
                         f"and the file is not a gemini-cli session or llm logs; rollchat "
                         f"import reads {SUPPORTED}")
    raise UsageError(f"{name}: unknown format; rollchat import reads {SUPPORTED}")


def _json(text: str) -> Imported | None:
    """A JSON document (gemini-cli, llm logs) or JSON lines (Claude Code, Codex); None when it
    is neither one of those."""
    try:
        whole: Any = json.loads(text)  # JSON lines fail fast, at the end of their first line
    except (ValueError, RecursionError):
        whole = None
    if gemini.is_gemini(whole):
        out = Imported("gemini-cli")
        gemini.read(whole, out)
        return out
    if llm.is_llm_logs(whole):
        out = Imported("llm-logs")
        llm.read(whole, out)
        return out
    lines = list(json_lines(text))
    for _, value in lines:
        if claude.is_claude(value):
            out = Imported("claude-code")
            claude.read(lines, out)
            return out
        if codex.is_codex(value):
            out = Imported("codex")
            codex.read(lines, out)
            return out
    return None
