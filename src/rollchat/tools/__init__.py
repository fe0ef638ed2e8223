"""What the agent may call: one ``Tool`` type (its spec for the model and the function that runs
it), whatever made it; built-ins, agent-file functions and MCP tools live in the submodules."""

# What the agent may call: one ``Tool`` type (its spec for the model and the function that
# runs it). The engine sees only ``Tool``; built-ins live in submodules (``archive``), an agent
# file's typed Python functions become tools in ``python``, and every call goes through
# ``runner.ToolRunner`` (approval, timing, errors) whatever made the tool.
#
# For tool sources (agent files, MCP servers): ``run`` takes the decoded JSON arguments and
# returns the result text (or image bytes, or text and images: tools.images.ToolReturn); it
# may block (an async tool runs its own event loop inside ``run``), raise (the error goes back
# to the model as the result), or be interrupted by Ctrl-C (KeyboardInterrupt: the call is
# recorded as interrupted). ``read_only`` tools (they change
# nothing outside rollchat) never need approval; ``source`` says where a tool came from
# ("builtin", "agent", "mcp:NAME", ...) for listings.

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from rollchat.providers.base import ToolSpec

ARCHIVE_TOOL_NAME = "session_archive_read"
SKILL_TOOL_NAME = "load_skill"
MEMORY_TOOL_NAME = "memory_search"


@dataclass(frozen=True)
class Tool:
    """A tool the agent may call: its spec for the model and the function that runs it."""

    spec: ToolSpec
    run: Callable[[Mapping[str, object]], object]  # text, image bytes, or a ToolReturn
    companion: bool = False  # offered only when a tool that is not a companion is registered
    read_only: bool = False  # True: changes nothing, so it runs without approval
    source: str = "builtin"
    rule_names: tuple[str, ...] = ()  # other names allow/deny rules match (an MCP tool's own)
    brief: ToolSpec | None = None  # a shorter spec for small windows (session/build.py)

    @property
    def name(self) -> str:
        return self.spec.name
