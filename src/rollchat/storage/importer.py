"""``rollchat import FILE``: another tool's transcript (Claude Code, Codex, a markdown chat) read
into turns. The file is untrusted: size-capped, decoded leniently, every string normalized."""

# ``rollchat import FILE``: another tool's transcript read into turns. The file is untrusted:
# read with a size cap, decoded leniently, every string cleaned (rollchat.text.normalize), nesting
# bounded;
# a malformed line is reported by number and skipped.
#
# Formats (detected from the content, not the name):
#
# * ``claude-code``: Claude Code's session files (``~/.claude/projects/*/<uuid>.jsonl``): lines
#   ``{"type": "user"|"assistant", "message": {"role", "content"}, "timestamp", ...}`` whose
#   content is a string or a list of blocks (``text``, ``tool_use``, ``tool_result``;
#   ``thinking`` and images are left out). Side chains (sub-agents) and other line types
#   (``summary``, ``system``, snapshots) are skipped.
# * ``codex``: Codex session files (``~/.codex/sessions/**/rollout-*.jsonl``): lines
#   ``{"type": "response_item", "payload": {"type": "message", "role", "content": [{"type":
#   "input_text"|"output_text", "text"}]}}``, ``function_call`` / ``function_call_output`` paired
#   by ``call_id`` (so are ``custom_tool_call`` / ``custom_tool_call_output``, the freeform
#   ``apply_patch``, and ``local_shell_call``); ``session_meta``, ``turn_context`` (its
#   ``model``) and ``event_msg`` lines (they repeat the messages) are not turns. Older files:
#   the same items one per line without the envelope (``{"type": "message", "role",
#   "content"}``). Codex's own preamble messages (``<environment_context>``,
#   ``<user_instructions>``) are left out.
# * ``markdown``: a chat in markdown, each message opened by a heading ``# User`` / ``## User``
#   (any level 1-4, optional trailing colon) or a bold label ``**User:**`` at the start of a
#   line, text after the label included. Speakers: User, You, Human, Me (the user); Assistant,
#   AI, Claude, ChatGPT, Codex, Model, Bot, Agent (the assistant). Text before the first label
#   is left out.

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from rollchat.domain import ToolCall, ToolExchange, Turn, answer_blocks
from rollchat.errors import UsageError
from rollchat.text.normalize import clean

FORMATS = ("claude-code", "codex", "markdown")
SUPPORTED = ("Claude Code session files (JSONL, ~/.claude/projects), Codex session files "
             "(rollout-*.jsonl, ~/.codex/sessions) and markdown chats ('## User' / "
             "'## Assistant' sections or '**User:**' / '**Assistant:**' labels)")
MAX_TEXT = 1_000_000  # characters kept of one message or tool result
MAX_DEPTH = 32  # nesting kept of a tool call's arguments
_CODEX_TYPES = frozenset({"session_meta", "response_item", "event_msg", "turn_context"})
_CLAUDE_TYPES = frozenset({"user", "assistant"})
_CODEX_PREAMBLE = ("<environment_context>", "<user_instructions>", "<permissions instructions>")
_USER_NAMES = "user|you|human|me"
_AGENT_NAMES = "assistant|ai|claude|chatgpt|codex|model|bot|agent"
_MD_LABEL = re.compile(
    rf"^(?:#{{1,4}}[ \t]+({_USER_NAMES}|{_AGENT_NAMES})[ \t]*:?[ \t]*$"
    rf"|\*\*({_USER_NAMES}|{_AGENT_NAMES}):?\*\*:?[ \t]?(.*)$)",
    re.IGNORECASE | re.MULTILINE)


@dataclass
class Imported:
    """What a file held: its format, its turns, the model named in it, and the lines that
    were skipped (``(line number, why)``)."""

    format: str
    turns: list[Turn] = field(default_factory=list)
    model: str | None = None
    skipped: list[tuple[int, str]] = field(default_factory=list)


class _Builder:
    """Messages in order -> turns: a user message opens a turn, the rest join the open one."""

    def __init__(self) -> None:
        self.turns: list[Turn] = []
        self.user: str | None = None
        self.parts: list[str] = []
        self.calls: dict[str, tuple[ToolCall, int]] = {}
        self.tools: list[ToolExchange] = []
        self.started: datetime | None = None
        self.last_time: datetime | None = None

    def when(self, raw: Any) -> None:
        stamp = _time(raw)
        if stamp is not None:
            self.last_time = stamp

    def user_text(self, text: str) -> None:
        self.close()
        self.user, self.started = text, self.last_time

    def assistant_text(self, text: str) -> None:
        self.open()
        self.parts.append(text)

    def call(self, call_id: str, name: str, arguments: Any) -> None:
        self.open()
        call = ToolCall(_cut(clean(call_id)) or f"imported_{len(self.calls)}",
                        _cut(clean(name)) or "tool", _arguments(arguments))
        self.calls[call.id] = (call, len(self.tools))
        self.tools.append(ToolExchange(call, ""))

    def result(self, call_id: str, text: str) -> None:
        self.open()
        found = self.calls.get(call_id)
        if found is None:  # a result with no call in this file: kept, under its id
            self.tools.append(ToolExchange(ToolCall(_cut(clean(call_id)) or "unknown",
                                                    "tool", {}), text))
            return
        call, index = found
        self.tools[index] = ToolExchange(call, text)

    def open(self) -> None:
        if self.user is None:  # the assistant spoke first: a turn with no user text
            self.user, self.started = "", self.last_time

    def close(self) -> None:
        if self.user is None:
            return
        if self.user or self.parts or self.tools:
            started = self.started or self.last_time or datetime.now(timezone.utc)
            self.turns.append(Turn("query", len(self.turns) + 1, started, self.user,
                                   answer_blocks("\n\n".join(self.parts), tuple(self.tools))))
        self.user, self.parts, self.tools, self.calls = None, [], [], {}


# ------------------------------------------------------------------ helpers


def _cut(text: str) -> str:
    return text if len(text) <= MAX_TEXT else text[:MAX_TEXT] + "\n[…cut at import]"


def _text(value: Any) -> str:
    """Text from a string or a list of text blocks (other blocks left out), cleaned and cut."""
    if isinstance(value, str):
        return _cut(clean(value))
    if isinstance(value, list):
        parts = [b.get("text") for b in value if isinstance(b, dict)
                 and b.get("type") in ("text", "input_text", "output_text")]
        return _cut(clean("\n\n".join(p for p in parts if isinstance(p, str))))
    return ""


def _bounded(value: Any, depth: int = 0) -> Any:
    if depth >= MAX_DEPTH:
        return "[…nested too deeply]"
    if isinstance(value, dict):
        return {clean(str(k))[:200]: _bounded(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        return [_bounded(v, depth + 1) for v in value]
    if isinstance(value, str):
        return _cut(clean(value))
    return value if isinstance(value, (int, float, bool)) or value is None else str(value)


def _arguments(raw: Any) -> dict[str, Any]:
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except (ValueError, RecursionError):
            return {"arguments": _cut(clean(raw))}
    bounded = _bounded(raw)
    return bounded if isinstance(bounded, dict) else {"arguments": bounded}


def _time(raw: Any) -> datetime | None:
    if not isinstance(raw, str):
        return None
    try:
        stamp = datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError:
        return None
    return stamp if stamp.tzinfo is not None else stamp.replace(tzinfo=timezone.utc)


def _lines(text: str) -> Iterator[tuple[int, Any]]:
    """(line number, decoded JSON value) of each non-empty line; a line that is not JSON is
    yielded as a ``_Bad``."""
    for number, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        try:
            yield number, json.loads(line)
        except RecursionError:
            yield number, _Bad("JSON nested too deeply")
        except ValueError:
            yield number, _Bad("not JSON")


@dataclass(frozen=True)
class _Bad:
    why: str


def _kind(value: Any) -> str | None:
    """The format a JSON line belongs to, when it tells."""
    if not isinstance(value, dict):
        return None
    kind = value.get("type")
    if kind in _CLAUDE_TYPES and isinstance(value.get("message"), dict):
        return "claude-code"
    if kind in _CODEX_TYPES and "payload" in value:
        return "codex"
    if "role" in value and "content" in value and kind in (None, "message"):
        return "codex"  # an older Codex file: the items without their envelope
    return None


# ------------------------------------------------------------------ the formats


def _objects(lines: list[tuple[int, Any]], out: Imported) -> Iterator[tuple[int, dict[str, Any]]]:
    """The lines that are JSON objects, with their numbers; the others are recorded in
    ``out.skipped`` with the reason."""
    for number, value in lines:
        if isinstance(value, _Bad):
            out.skipped.append((number, f"{value.why} (skipped)"))
        elif not isinstance(value, dict):
            out.skipped.append((number, "not a JSON object (skipped)"))
        else:
            yield number, value


def _claude(lines: list[tuple[int, Any]], out: Imported) -> None:
    build = _Builder()
    for number, value in _objects(lines, out):
        if value.get("type") not in _CLAUDE_TYPES or value.get("isSidechain") is True:
            continue  # summaries, system lines, snapshots, sub-agents
        message = value.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(content, (str, list)):
            out.skipped.append((number, "a message without content (skipped)"))
            continue
        build.when(value.get("timestamp"))
        if value["type"] == "assistant" and isinstance(message, dict) and \
                isinstance(message.get("model"), str):
            out.model = clean(message["model"])[:100]
        _claude_content(build, value["type"], content)
    build.close()
    out.turns = build.turns


def _claude_content(build: _Builder, role: str, content: str | list[Any]) -> None:
    if isinstance(content, str):
        (build.user_text if role == "user" else build.assistant_text)(_cut(clean(content)))
        return
    texts = _text(content)
    if texts:
        (build.user_text if role == "user" else build.assistant_text)(texts)
    for block in content:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "tool_use":
            build.call(str(block.get("id", "")), str(block.get("name", "")),
                       block.get("input", {}))
        elif block.get("type") == "tool_result":
            result = block.get("content", "")
            build.result(str(block.get("tool_use_id", "")),
                         _text(result) if not isinstance(result, (dict, int, float)) else
                         _cut(clean(json.dumps(_bounded(result), ensure_ascii=False))))


def _codex(lines: list[tuple[int, Any]], out: Imported) -> None:
    build = _Builder()
    for number, value in _objects(lines, out):
        build.when(value.get("timestamp"))
        item = value.get("payload") if value.get("type") in _CODEX_TYPES else value
        if value.get("type") == "turn_context" and isinstance(item, dict) and \
                isinstance(item.get("model"), str):
            out.model = clean(item["model"])[:100]
        if value.get("type") in ("session_meta", "event_msg", "turn_context"):
            continue
        if not isinstance(item, dict):
            out.skipped.append((number, "an item that is not a JSON object (skipped)"))
            continue
        kind = item.get("type", "message" if "role" in item else None)
        if kind == "message":
            role, text = item.get("role"), _text(item.get("content"))
            if role == "user" and text and not text.lstrip().startswith(_CODEX_PREAMBLE):
                build.user_text(text)
            elif role == "assistant" and text:
                build.assistant_text(text)
        elif kind == "function_call":
            build.call(str(item.get("call_id", "")), str(item.get("name", "")),
                       item.get("arguments", {}))
        elif kind == "custom_tool_call":  # a freeform tool (apply_patch): its text input
            build.call(str(item.get("call_id", "")), str(item.get("name", "")),
                       {"input": item.get("input", "")})
        elif kind == "local_shell_call":  # {"action": {"type": "exec", "command": [...]}}
            build.call(str(item.get("call_id") or item.get("id") or ""), "local_shell",
                       item.get("action", {}))
        elif kind in ("function_call_output", "custom_tool_call_output"):
            output = item.get("output", "")
            if isinstance(output, dict):  # {"output": "...", "metadata": {...}}
                output = output.get("output", json.dumps(_bounded(output), ensure_ascii=False))
            build.result(str(item.get("call_id", "")),
                         _text(output) if isinstance(output, (str, list)) else str(output))
    build.close()
    out.turns = build.turns


_FENCE = re.compile(r"^[ ]{0,3}(`{3,}|~{3,})(.*)$", re.MULTILINE)


def _fenced(text: str) -> list[tuple[int, int]]:
    """The spans of the fenced code blocks of ``text`` (an unclosed one runs to the end): a
    ``## User`` in an answer's code block is code, not the next message."""
    spans: list[tuple[int, int]] = []
    opened: re.Match[str] | None = None
    for fence in _FENCE.finditer(text):
        if opened is None:
            opened = fence
        elif fence[1][0] == opened[1][0] and len(fence[1]) >= len(opened[1]) and \
                not fence[2].strip():  # a closing fence: as long, nothing after it
            spans.append((opened.start(), fence.end()))
            opened = None
    if opened is not None:
        spans.append((opened.start(), len(text)))
    return spans


def _markdown(text: str, out: Imported) -> None:
    build = _Builder()
    fenced = _fenced(text)
    matches = [m for m in _MD_LABEL.finditer(text)
               if not any(start < m.start() < end for start, end in fenced)]
    for i, m in enumerate(matches):
        speaker = (m[1] or m[2]).lower()
        end = matches[i + 1].start() if i + 1 < len(matches) else len(text)
        body = ((m[3] or "") + text[m.end():end]).strip("\n").strip()
        body = _cut(clean(body))
        if re.fullmatch(_USER_NAMES, speaker):
            build.user_text(body)
        elif body:
            build.assistant_text(body)
    build.close()
    out.turns = build.turns


def read_transcript(data: bytes, name: str) -> Imported:
    """The turns of a transcript file's ``data`` (``name``: for messages). UsageError when
    the format is none of the supported ones."""
    if b"\0" in data:
        raise UsageError(f"{name} is a binary file; rollchat import reads {SUPPORTED}")
    text = clean(data.decode("utf-8", errors="replace").removeprefix("\ufeff"))
    if not text.strip():
        raise UsageError(f"{name} is empty: nothing to import")
    head = [line for line in text.split("\n", 200)[:200] if line.strip()][:50]
    if any(line.lstrip().startswith("{") for line in head):  # JSON lines (some maybe broken)
        lines = list(_lines(text))
        kind = next((k for _, v in lines for k in [_kind(v)] if k is not None), None)
        if kind is not None:
            out = Imported(kind)
            (_claude if kind == "claude-code" else _codex)(lines, out)
            return out
        if _MD_LABEL.search(text) is None:
            raise UsageError(f"{name}: unknown format: no line is a Claude Code or Codex "
                             f"message; rollchat import reads {SUPPORTED}")
    if _MD_LABEL.search(text) is None:
        raise UsageError(f"{name}: unknown format; rollchat import reads {SUPPORTED}")
    out = Imported("markdown")
    _markdown(text, out)
    return out
