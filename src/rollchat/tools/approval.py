"""Approval: whether a tool call may run. One place every call passes through (``Gate``, used
by ``runner.run_call``), whatever made the tool (built-in, agent file, MCP server)."""

# Order: a ``deny`` rule refuses; a read-only tool runs; an ``allow`` rule runs; a tool the
# user approved "always" in this session runs; then the mode decides: ``auto`` runs,
# ``never`` refuses, ``ask`` asks the user (y: once, a: always for this tool in this session,
# n: no). "This session" is the one the user is in: a compaction goes on with it, but ``clear``,
# ``resume``, ``fork`` and a handoff start another, with nothing approved (``new_session``).
# With nobody to ask (piped input without --yes) a call that needs asking is refused:
# never approved silently. A refusal goes back to the model as the tool's result.

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING, Literal

from rollchat.domain import ToolCall
from rollchat.tools import Tool

if TYPE_CHECKING:
    from rollchat.tools.hooks import Hooks

Mode = Literal["ask", "auto", "never"]
Reply = Literal["y", "a", "n"]
# Asks the user about one call: y (once), a (always for this tool), n (no); None: nobody to
# ask (no terminal), so the call is refused.
Asker = Callable[[ToolCall, Tool], "Reply | None"]


def matches(name: str, patterns: Sequence[str]) -> bool:
    """Whether a tool name matches one of ``patterns`` (exact names or globs: ``github.*``)."""
    return any(fnmatchcase(name, pattern) for pattern in patterns)


def tool_matches(tool: Tool, patterns: Sequence[str]) -> bool:
    """Whether ``tool`` matches by the name the model calls or by its own (``rule_names``:
    an MCP tool's name on its server, which a name made unique does not share)."""
    return any(matches(name, patterns) for name in (tool.name, *tool.rule_names))


@dataclass
class Gate:
    """The approval policy of one agent, and what the user approved in this session."""

    mode: Mode = "auto"
    allow: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()
    ask: Asker | None = None
    always: set[str] = field(default_factory=set)
    hooks: Hooks | None = None  # the user's PreToolUse/PostToolUse hooks (tools.hooks)

    def rule(self, tool: Tool) -> str:
        """What would happen to a call of ``tool`` now, in words (for the ``tools`` listing)."""
        if tool_matches(tool, self.deny):
            return "denied by a rule"
        if tool.read_only:
            return "read-only: runs"
        if tool_matches(tool, self.allow):
            return "allowed by a rule"
        if tool.name in self.always:
            return "approved for this session"
        return {"auto": "runs (approval: auto)", "never": "refused (approval: never)",
                "ask": "asks first"}[self.mode]

    def check(self, call: ToolCall, tool: Tool) -> str | None:
        """None when the call may run, else why not (the text the model gets back)."""
        name = tool.name
        if tool_matches(tool, self.deny):
            return f"refused: the tool {name} is denied by the agent's rules"
        if tool.read_only or tool_matches(tool, self.allow) or name in self.always:
            return None
        if self.mode == "auto":
            return None
        if self.mode == "never":
            return "refused: tool calls are not allowed for this agent (approval: never)"
        reply = self.ask(call, tool) if self.ask is not None else None
        if reply is None:
            return (f"refused: the tool {name} needs the user's approval and there is no "
                    "terminal to ask (the user can pass --yes or allow the tool)")
        if reply == "a":
            self.always.add(name)
        return None if reply in ("y", "a") else f"refused: the user declined to run {name}"

    @contextmanager
    def allowing(self, patterns: Sequence[str]) -> Iterator[None]:
        """``patterns`` allowed too while the block runs (a saved prompt's ``allowed-tools``,
        for its one turn); a deny rule still refuses."""
        before = self.allow
        self.allow = (*before, *patterns)
        try:
            yield
        finally:
            self.allow = before

    def new_session(self) -> None:
        """Another session begins (``clear``, ``resume``, ``fork``, a handoff): what the user
        approved "always" was for the one before, so it asks again."""
        self.always.clear()
