"""``rollchat import FILE``: another tool's transcript read into turns, as the person lived it.
The format is told from the content; the file is untrusted (cleaned, cut, bounded)."""

# One module per format: claude (Claude Code JSONL and its sub-agents' side-chain files), codex
# (both rollout generations), gemini (gemini-cli sessions), aider (.aider.chat.history.md), llm
# (``llm logs --json``), markdown (a chat written as markdown). Each feeds a Builder (builder.py)
# that makes one turn per prompt the user typed; the tools' own lines become notes, counted.
# A malformed line is reported by number and skipped.

from __future__ import annotations

import re
from itertools import chain
from typing import Any

from rollchat.errors import UsageError
from rollchat.storage.imports import aider, claude, codex, gemini, llm, markdown
from rollchat.storage.imports.common import DECODER, Imported, json_lines
from rollchat.storage.titles import first_line_title
from rollchat.text.normalize import clean

_SOMETHING = re.compile(rb"\S")
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
    if _binary(data):
        raise UsageError(f"{name} is a binary file; rollchat import reads {SUPPORTED}")
    data = data.removeprefix(b"\xef\xbb\xbf")
    if not data or data.isspace():
        raise UsageError(f"{name} is empty: nothing to import")
    out = _read(data, name)
    if out.title is None:
        out.title = next((t for t in (first_line_title(turn.user) for turn in out.turns) if t),
                         None)
    return out


def _binary(data: bytes) -> bool:
    """Whether ``data`` is no text: of its first 64 KiB, eight NUL bytes or more that are
    over one in a hundred of them or in bytes that are not UTF-8 (an image, an archive). A
    stray NUL in a text file is read like any control character (``clean`` shows it as
    "\u2400"), not a reason to refuse the file."""
    head = data[:65536]
    nuls = head.count(b"\0")
    if nuls < 8:
        return False
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as e:
        if e.start < len(head) - 3:  # not a character cut at the end of the head
            return True
    return nuls * 100 > len(head)


def _read(data: bytes, name: str) -> Imported:
    head = [line for line in data[:200_000].split(b"\n", 200)[:200] if line.strip()][:50]
    json_like = any(line.lstrip()[:1] in (b"{", b"[") for line in head)  # some maybe broken
    if json_like:
        found = _json(data)
        if found is not None:
            return found
    text = clean(data.decode("utf-8", errors="replace"))
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


def _json(data: bytes) -> Imported | None:
    """A JSON document (gemini-cli, llm logs) or JSON lines (Claude Code, Codex); None when it
    is neither one of those. JSON is not cleaned as a whole (a control character is escaped
    inside a string; each string taken from it is cleaned), and JSON lines are decoded one at
    a time from the bytes: a 50 MB file is never held as one string."""
    whole = _document(data)
    if gemini.is_gemini(whole):
        out = Imported("gemini-cli")
        gemini.read(whole, out)
        return out
    if llm.is_llm_logs(whole):
        out = Imported("llm-logs")
        llm.read(whole, out)
        return out
    del whole
    lines = json_lines(data)
    seen: list[tuple[int, Any]] = []
    for number, value in lines:
        seen.append((number, value))
        reader = (("claude-code", claude.read) if claude.is_claude(value) else
                  ("codex", codex.read) if codex.is_codex(value) else None)
        if reader is not None:
            out = Imported(reader[0])
            reader[1](chain(seen, lines), out)
            return out
    return None


def _document(data: bytes) -> Any:
    """The file as one JSON value, when it is one (None otherwise). A first line that is a
    whole value followed by more lines is JSON lines: the rest is not decoded here."""
    end = data.find(b"\n")
    if end >= 0 and _SOMETHING.search(data, end) is not None:
        try:
            DECODER.decode(data[:end].decode("utf-8", errors="replace"))
            return None  # a whole value, then more: JSON lines
        except (ValueError, RecursionError):
            pass
    try:
        return DECODER.decode(data.decode("utf-8", errors="replace"))
    except (ValueError, RecursionError):
        return None
