"""Between MCP and rollchat's ``Tool``: the names the model sees (``mcp__server__tool``), the
server's include/exclude choice, and a tool result turned into text. Works on the SDK's
objects by their attributes; the SDK itself is imported by ``tools.mcp`` only."""

from __future__ import annotations

import fnmatch
import hashlib
import json
import re
from collections.abc import Iterable, Sequence
from typing import Any

from rollchat.config.mcp_servers import McpServerConfig

PREFIX = "mcp"
MAX_NAME = 64  # what both providers accept: ^[A-Za-z0-9_-]{1,64}$
_NOT_ALLOWED = re.compile(r"[^A-Za-z0-9_-]")


class McpToolError(Exception):
    """The server answered the call with ``is_error``, or the call failed: the engine sends
    the message back to the model as an error result."""


def exposed_name(server: str, tool: str, taken: Iterable[str] = ()) -> str:
    """The name the model calls: ``mcp__<server>__<tool>``, limited to the characters and the
    length providers accept; a name cut or clashing gets a short hash of the original."""
    wanted = f"{PREFIX}__{server}__{tool}"
    name = _NOT_ALLOWED.sub("_", wanted)
    taken = set(taken)
    if len(name) <= MAX_NAME and name not in taken:
        return name
    digest = hashlib.sha256(wanted.encode()).hexdigest()[:8]
    return f"{name[:MAX_NAME - 9]}_{digest}"


def chosen(config: McpServerConfig, names: Sequence[str]) -> tuple[list[str], list[str]]:
    """The tool names to offer (in ``names``' order) after include/exclude (shell-style
    patterns), and the include patterns that matched no tool (worth a line)."""
    def hit(name: str, patterns: Iterable[str]) -> bool:
        return any(fnmatch.fnmatchcase(name, p) for p in patterns)

    keep = [n for n in names if config.include_tools is None or hit(n, config.include_tools)]
    keep = [n for n in keep if not hit(n, config.exclude_tools)]
    unmatched = [p for p in config.include_tools or () if not any(
        fnmatch.fnmatchcase(n, p) for n in names)]
    return keep, unmatched


def result_text(result: Any) -> str:
    """A ``CallToolResult`` as text for the model; raises McpToolError when ``is_error``."""
    parts = [_block_text(block) for block in getattr(result, "content", None) or ()]
    structured = getattr(result, "structured_content", None)
    if not any(parts) and structured is not None:
        parts = [json.dumps(structured, ensure_ascii=False, sort_keys=True)]
    text = "\n".join(p for p in parts if p)
    if getattr(result, "is_error", False):
        raise McpToolError(text or "the tool reported an error")
    return text


def _block_text(block: Any) -> str:
    kind = getattr(block, "type", "")
    if kind == "text":
        return str(block.text)
    if kind in ("image", "audio"):
        size = len(getattr(block, "data", "") or "") * 3 // 4
        return f"[{kind}: {getattr(block, 'mime_type', '?')}, about {size:,} bytes, not shown]"
    if kind == "resource_link":
        return f"[resource: {block.uri}" + (f" ({block.name})" if block.name else "") + "]"
    if kind == "resource":
        inner = block.resource
        text = getattr(inner, "text", None)
        if isinstance(text, str):
            return text
        return f"[resource: {inner.uri} ({getattr(inner, 'mime_type', None) or 'binary'})]"
    return f"[{kind or 'unknown'} content, not shown]"
