"""The live line shown while the first message waits for MCP servers to start: each server with
the seconds it has taken and its ``startup_timeout``, redrawn in place, gone once they settle."""

from __future__ import annotations

from contextlib import ExitStack
from typing import TYPE_CHECKING, Any

from rollchat.events import ServersStarting

if TYPE_CHECKING:
    from rollchat.ui.render import Renderer


def starting_text(event: ServersStarting) -> str:
    """``Starting MCP servers: time 3 s of 30, npm 12 s of 120 (Ctrl-C: go on without
    them)``."""
    parts = ", ".join(f"{name} {elapsed:.0f} s of {timeout:g}"
                      for name, elapsed, timeout in event.servers)
    return f"Starting MCP servers: {parts} (Ctrl-C: go on without them)"


class StartingLine:
    """One live line, updated by each ServersStarting; ``end`` removes it."""

    def __init__(self, out: Renderer) -> None:
        self._out = out
        self._stack = ExitStack()
        self._status: Any = None

    def show(self, event: ServersStarting) -> None:
        if not event.servers:
            self.end()
            return
        if not self._out.interactive:  # no terminal: the "Waiting for" line said it
            return
        from rich.markup import escape

        from rollchat.ui.sanitize import harmless

        text = escape(harmless(starting_text(event)))
        if self._status is None:
            self._status = self._stack.enter_context(self._out.console.status(text))
        else:
            self._status.update(text)

    def end(self) -> None:
        self._status = None
        self._stack.close()
