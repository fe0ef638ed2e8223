"""The offline model's use of tools other than the archive: a message ``use TOOL`` or
``use TOOL {"arg": "value"}`` calls TOOL (its full name, or the last part of an MCP tool's
``mcp__server__tool`` name when that is unique) with those arguments, and the answer after
the call reports what the tool returned. Lets every tool be tried without an API key."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from rollchat.domain import ToolCall
from rollchat.providers.base import ToolSpec

_USE = re.compile(r"\s*use\s+([A-Za-z0-9_.-]+)\s*(\{.*\})?\s*", re.DOTALL | re.IGNORECASE)


def requested_call(text: str, tools: Sequence[ToolSpec], call_id: str,
                   ) -> tuple[str, ToolCall | None] | None:
    """(the text before the call, the call) when ``text`` asks for a tool, None otherwise;
    (an explanation, None) when the tool is unknown or the arguments are not a JSON object."""
    match = _USE.fullmatch(text)
    if match is None or not tools:
        return None
    wanted = match[1]
    names = [t.name for t in tools]
    found = [n for n in names if n == wanted] or [n for n in names if n.endswith(f"__{wanted}")]
    if len(found) != 1:
        why = "is offered by more than one server" if found else "is not among my tools"
        return f"The tool {wanted!r} {why}. My tools: {', '.join(names)}.", None
    try:
        arguments = json.loads(match[2]) if match[2] else {}
    except ValueError as exc:
        return f"Those arguments are not valid JSON ({exc}).", None
    if not isinstance(arguments, dict):
        return "The arguments must be a JSON object.", None
    return f"Calling `{found[0]}`.", ToolCall(call_id, found[0], arguments)
