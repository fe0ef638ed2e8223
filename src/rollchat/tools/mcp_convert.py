"""Between MCP and rollchat's ``Tool``: the names the model sees (``mcp__server__tool``, unique),
the server's include/exclude choice, the bounds on a tool's spec, and results turned into text.
Works on the SDK's objects by their attributes; the SDK is imported by ``tools.mcp`` only."""

from __future__ import annotations

import base64
import fnmatch
import hashlib
import json
import re
from collections.abc import Iterable, Sequence
from typing import Any

from rollchat.config.mcp_servers import McpServerConfig
from rollchat.domain import Image, image_marker
from rollchat.storage.images import image
from rollchat.tools.images import ToolReturn

PREFIX = "mcp"
MAX_NAME = 64  # what both providers accept: ^[A-Za-z0-9_-]{1,64}$
MAX_DESCRIPTION = 2048  # characters of a tool's description the model is sent (Claude Code's)
MAX_SCHEMA = 16 * 1024  # characters of a tool's input schema (as JSON); a larger one is left out
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


def original_name(server: str, tool: str) -> str:
    """The name ``allow``/``deny`` rules match besides the exposed one: the server's own."""
    return f"{PREFIX}__{server}__{tool}"


class Names:
    """The exposed names of one chat: unique across servers and kept for a server that
    restarts. A tool whose own name is already valid keeps it before one that had to be
    changed into it (``a_b`` stays ``a_b``; ``a b`` gets a short hash)."""

    def __init__(self) -> None:
        self._given: dict[tuple[str, str], str] = {}

    def assign(self, server: str, tools: Sequence[str]) -> dict[str, str]:
        """Exposed name -> the server's own name, for ``tools`` in the order given (valid
        names first), plus one line per name that had to be made unique."""
        order = sorted(tools, key=lambda t: _NOT_ALLOWED.search(t) is not None)
        out: dict[str, str] = {}
        for tool in order:
            key = (server, tool)
            if key not in self._given:
                self._given[key] = exposed_name(server, tool, self._given.values())
            out[self._given[key]] = tool
        return out

    def reserve(self, server: str, wanted: str) -> str:
        """A name of rollchat's own for ``server`` (its resource reader), never a tool's."""
        key = (server, "\x00" + wanted)
        if key not in self._given:
            self._given[key] = exposed_name(server, wanted, self._given.values())
        return self._given[key]

    def collisions(self, server: str, tools: Sequence[str]) -> list[str]:
        """Lines naming the tools of ``server`` whose name had to be made unique."""
        lines = []
        for tool in tools:
            name = self._given.get((server, tool))
            plain = _NOT_ALLOWED.sub("_", original_name(server, tool))
            if name is not None and name != plain and len(plain) <= MAX_NAME:
                lines.append(f"MCP server {server!r}: tool {tool!r} is offered as {name} "
                             f"(its name would collide with another tool's)")
        return lines


def bounded_spec(description: str, schema: dict[str, Any]) -> tuple[str, str | None]:
    """The description the model is sent (cut to MAX_DESCRIPTION characters), and why the
    tool is left out (a schema over MAX_SCHEMA characters), or None."""
    if len(description) > MAX_DESCRIPTION:
        description = description[:MAX_DESCRIPTION - 1] + "…"
    if schema_size(schema) > MAX_SCHEMA:
        return description, f"its input schema is over {MAX_SCHEMA // 1024} KiB"
    return description, None


def schema_size(schema: Any) -> int:
    try:
        return len(json.dumps(schema, ensure_ascii=False, separators=(",", ":")))
    except (TypeError, ValueError):
        return MAX_SCHEMA + 1


def spec_tokens(name: str, description: str, schema: Any) -> int:
    """About how many tokens a tool's spec adds to every request (4 characters a token)."""
    return (len(name) + len(description) + schema_size(schema)) // 4 + 8


def needs_task(tool: Any) -> bool:
    """Whether a tool can only run as a task (``execution.taskSupport: "required"``), which
    rollchat does not drive: such a tool is not offered."""
    return getattr(getattr(tool, "execution", None), "task_support", None) == "required"


def resource_text(result: Any, limit: int) -> str:
    """A ``ReadResourceResult`` as text: text contents in full (to ``limit`` characters),
    binary ones described."""
    parts = []
    for item in getattr(result, "contents", None) or ():
        text = getattr(item, "text", None)
        if isinstance(text, str):
            parts.append(text)
        else:
            size = len(getattr(item, "blob", "") or "") * 3 // 4
            parts.append(f"[binary resource {item.uri}: "
                         f"{getattr(item, 'mime_type', None) or 'unknown type'}, about "
                         f"{size:,} bytes, not shown]")
    text = "\n".join(parts) or "(the resource is empty)"
    if len(text) > limit:
        text = text[:limit] + f"\n[... cut at {limit:,} characters]"
    return text


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


def result_text(result: Any) -> str | ToolReturn:
    """A ``CallToolResult`` as the model gets it: its text, with its images when it has some
    (a ToolReturn, each image's place among the texts held by its marker line: see
    domain.image_marker), in the order the server gave them; raises McpToolError when
    ``is_error``."""
    images: list[Image] = []
    parts = [_block_text(block, images) for block in getattr(result, "content", None) or ()]
    structured = getattr(result, "structured_content", None)
    if not any(parts) and not images and structured is not None:
        parts = [json.dumps(structured, ensure_ascii=False, sort_keys=True)]
    text = "\n".join(p for p in parts if p)
    if getattr(result, "is_error", False):
        raise McpToolError(text or "the tool reported an error")
    return ToolReturn(text, tuple(images)) if images else text


def _block_text(block: Any, images: list[Image]) -> str:
    """A content block as text; an image the model can be shown goes into ``images``."""
    kind = getattr(block, "type", "")
    if kind == "text":
        return str(block.text)
    if kind == "image":
        try:
            data = base64.b64decode(getattr(block, "data", "") or "", validate=True)
        except ValueError:
            return f"[image: {getattr(block, 'mime_type', '?')}, not shown: not valid base64]"
        made = image(data, getattr(block, "mime_type", None))
        if isinstance(made, str):
            return made
        images.append(made)
        return image_marker(len(images), made)  # its place among the texts
    if kind == "audio":
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


def progress_text(done: float, total: float | None, message: str | None) -> str:
    """A progress report in words: ``step 2 (2/3)``, ``40%``, ``12``."""
    amount = (f"{done:g}/{total:g}" if total else f"{done:g}")
    return f"{message} ({amount})" if message else amount
