"""gemini-cli chat sessions (``~/.gemini/tmp/<project hash>/chats/session-*.json``): one turn per
user message, each answer's text before its tool calls and their results, thoughts counted."""

# The file is one JSON object: ``{"sessionId", "projectHash", "startTime", "lastUpdated",
# "messages": [...]}``. A message is ``{"id", "timestamp", "type": "user"|"gemini"|"info"|
# "error"|"warning", "content", "thoughts"?, "toolCalls"?, "model"?, "tokens"?}``; a tool call
# is ``{"id", "name", "args", "result": [{"functionResponse": {"response": {"output"}}}],
# "status": "success"|"error"|"cancelled", "resultDisplay"?}``. gemini-cli writes a reply's text
# and then runs its calls, so the text comes first.

from __future__ import annotations

from typing import Any

from rollchat.storage.imports.builder import Builder
from rollchat.storage.imports.common import MAX_NOTE, Imported, as_text, cleaned, joined_text
from rollchat.text.normalize import clean


def is_gemini(value: Any) -> bool:
    """Whether a decoded file is a gemini-cli session."""
    return (isinstance(value, dict) and isinstance(value.get("messages"), list)
            and "sessionId" in value and ("projectHash" in value or "startTime" in value))


def read(value: dict[str, Any], out: Imported) -> None:
    """Fill ``out`` from a decoded gemini-cli session."""
    build = Builder(out)
    build.when(value.get("startTime"))
    for number, message in enumerate(value["messages"], 1):
        if not isinstance(message, dict):
            out.skipped.append((number, "message that is not a JSON object (skipped)"))
            continue
        build.when(message.get("timestamp"))
        kind = message.get("type")
        text = joined_text(message.get("content"))
        if kind == "user":
            if text.strip():
                build.prompt(text)
        elif kind in ("gemini", "model", "assistant"):
            _reply(build, out, message, text)
        elif kind in ("info", "error", "warning") and text.strip():
            build.note(kind, cleaned(text, MAX_NOTE), f"{kind} line")
    build.finish()


def _reply(build: Builder, out: Imported, message: dict[str, Any], text: str) -> None:
    if isinstance(message.get("model"), str):
        out.model = clean(message["model"])[:100]
    thoughts = message.get("thoughts")
    if isinstance(thoughts, list) and thoughts:
        build.leave_out("thinking block", len(thoughts))
    build.text(text)
    calls = message.get("toolCalls")
    for call in calls if isinstance(calls, list) else []:
        if not isinstance(call, dict):
            continue
        call_id = str(call.get("id", ""))
        build.call(call_id, str(call.get("name", "")), call.get("args", {}))
        build.result(call_id, _output(call), call.get("status") not in ("success", None))


def _output(call: dict[str, Any]) -> str:
    """A call's result: its function responses' outputs (errors too), else what was shown."""
    parts: list[str] = []
    results = call.get("result")
    for item in results if isinstance(results, list) else []:
        response = item.get("functionResponse", {}).get("response") \
            if isinstance(item, dict) and isinstance(item.get("functionResponse"), dict) else None
        if isinstance(response, dict):
            value = response.get("output", response.get("error", response))
            parts.append(as_text(value))
    if not parts and call.get("resultDisplay") is not None:
        parts.append(as_text(call["resultDisplay"]))
    return "\n\n".join(p for p in parts if p)
