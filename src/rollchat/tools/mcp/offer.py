"""What the MCP servers offer the model, bounded, and the lines that tell what changed: a server
joining or withdrawn, a failure, tools left out (task-only, schema or window share too large)."""

# Bounds: each description is cut to MAX_DESCRIPTION characters, a schema over MAX_SCHEMA
# leaves its tool out, and the specs together take at most ``budget`` tokens (a share of the
# window) and MAX_TOOLS tools (OpenAI accepts 128 with the built-ins): servers in their
# configured order, each one's tools sorted, the rest left out with one line per server.

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from rollchat.providers.base import ToolSpec
from rollchat.text.wording import plural
from rollchat.tools import Tool
from rollchat.tools.approval import matches
from rollchat.tools.images import ToolReturn
from rollchat.tools.mcp.serve import Server
from rollchat.tools.mcp_convert import (
    McpToolError,
    Names,
    bounded_spec,
    needs_task,
    original_name,
    resource_text,
    spec_tokens,
)

DEFAULT_TOOL_TOKENS = 30_000  # the specs' share when the window is not known
MAX_TOOLS = 100
MAX_RESOURCE_CHARS = 200_000
READER = "read_resource"


@dataclass
class Offer:
    """The tools offered at one collection, by server, and what was left out and why."""

    tools: dict[str, Tool] = field(default_factory=dict)
    servers: dict[str, int] = field(default_factory=dict)  # server -> tools offered
    left: dict[str, str] = field(default_factory=dict)  # exposed name -> why not offered
    notes: list[str] = field(default_factory=list)  # lines that stand while nothing changes


Call = Callable[[Server, str, dict[str, Any]], "str | ToolReturn"]
Read = Callable[[Server, str], Any]


def offer(servers: Sequence[Server], names: Names, budget: int, call: Call,
          read: Read) -> Offer:
    """The tools of the ready servers within the bounds (caller holds the lock)."""
    out = Offer()
    used = 0
    for server in servers:
        if server.state != "ready":
            continue
        left: dict[str, list[str]] = {}
        count = 0
        for exposed, spec in sorted(server.tools.items()):
            schema = dict(spec.input_schema or {"type": "object", "properties": {}})
            description, why = bounded_spec(spec.description or spec.title
                                            or f"{spec.name} ({server.name})", schema)
            if needs_task(spec):
                why = "they run only as tasks, which rollchat does not drive"
            cost = spec_tokens(exposed, description, schema)
            if why is None and (used + cost > budget or len(out.tools) >= MAX_TOOLS):
                why = (f"the tools' specs would take more than {budget:,} tokens "
                       f"(or {MAX_TOOLS} tools) of every request")
            if why is not None:
                left.setdefault(why, []).append(spec.name)
                out.left[exposed] = why
                continue
            used += cost
            count += 1
            out.tools[exposed] = _tool(server, exposed, spec, description, schema, call)
        if server.reads_resources and server.config.include_tools is None and not matches(
                READER, server.config.exclude_tools):  # (include_tools names tools only)
            name = names.reserve(server.name, READER)
            out.tools[name] = _reader(server, name, read)
        out.servers[server.name] = count
        for why, tools in left.items():
            out.notes.append(f"MCP server {server.name!r}: {plural(len(tools), 'tool')} left "
                             f"out ({_names(tools)}): {why}")
        out.notes += names.collisions(server.name, [s.name for s in server.tools.values()])
        if server.unmatched:
            out.notes.append(f"MCP server {server.name!r}: include_tools "
                             f"{', '.join(server.unmatched)} matched no tool")
    out.tools = dict(sorted(out.tools.items()))  # a stable order, whatever became ready first
    return out


def lines_for(servers: Sequence[Server], now: Offer, last: Offer | None,
              first: bool) -> list[str]:
    """One line per change since ``last`` (caller holds the lock)."""
    lines: list[str] = []
    for server in servers:
        was = last is not None and server.name in last.servers
        news, server.news = "; ".join(server.news), []
        if server.name in now.servers and not was and last is not None:
            lines.append(f"MCP server {server.name!r} is ready: "
                         f"{plural(now.servers[server.name], 'tool')} offered from this "
                         "message")
        elif was and server.name not in now.servers:
            assert last is not None
            why = news or server.reason or _stopped_why(server)
            lines.append(f"MCP server {server.name!r} stopped: {why}; its "
                         f"{plural(last.servers[server.name], 'tool')} are withdrawn"
                         + _to_do(server, why))
            server.told = True
        elif was and news:  # it went away and came back between two messages
            lines.append(f"MCP server {server.name!r} stopped: {news}; it is back: its "
                         f"{plural(now.servers[server.name], 'tool')} are offered again")
        elif server.state == "failed" and not server.told:
            lines.append(f"MCP server {server.name!r} did not start: {server.reason}; the "
                         "chat goes on without its tools" + _to_do(server, server.reason))
            server.told = True
        elif first and server.state == "starting":
            lines.append(f"MCP server {server.name!r} is still starting (startup_timeout "
                         f"{server.config.startup_timeout:g} s); its tools join when it is "
                         "ready")
    told = set(last.notes) if last is not None else set()
    return lines + [note for note in now.notes if note not in told]


def _stopped_why(server: Server) -> str:
    """Why a server is not ready when nothing else said so."""
    if server.state == "starting":
        return "it is starting again"
    return server.state if server.state != "stopped" else "rollchat stopped it"


def _to_do(server: Server, why: str) -> str:
    """What the user can do, unless ``why`` says it already (a restart under way, a hint)."""
    if "tools restart" in why or "restarting (" in why or server.state == "starting" \
            or server.state == "held":
        return ""
    if "is not set in the environment" in why:
        return "; set it and start rollchat again"
    if "is not supported (use" in why:
        return ""
    if "did not start within" in why:
        return (f"; raise its startup_timeout (now {server.config.startup_timeout:g} s) "
                f"or run 'tools restart {server.name}'")
    return f"; 'tools restart {server.name}' starts it again"


def _tool(server: Server, name: str, spec: Any, description: str, schema: dict[str, Any],
          call: Call) -> Tool:
    def run(arguments: Any) -> str | ToolReturn:
        return call(server, spec.name, dict(arguments))

    return Tool(ToolSpec(name, description, schema), run, source=f"mcp:{server.name}",
                rule_names=(original_name(server.name, spec.name),))


def _reader(server: Server, name: str, read: Read) -> Tool:
    schema = {"type": "object", "properties": {"uri": {
        "type": "string", "description": "the resource's URI, e.g. from a resource link"}},
        "required": ["uri"]}
    description = (f"Read a resource of the MCP server {server.name!r} by its URI (a "
                   "resource link one of its tools returned). Read-only.")

    def run(arguments: Any) -> str:
        uri = arguments.get("uri")
        if not isinstance(uri, str) or not uri.strip():
            raise McpToolError("uri must be the resource's URI (a string)")
        return resource_text(read(server, uri.strip()), MAX_RESOURCE_CHARS)

    return Tool(ToolSpec(name, description, schema), run, read_only=True,
                source=f"mcp:{server.name}")


def _names(tools: Sequence[str]) -> str:
    shown = ", ".join(tools[:5])
    return shown + (f" and {len(tools) - 5} more" if len(tools) > 5 else "")


def short(text: str) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= 100 else line[:97] + "..."
