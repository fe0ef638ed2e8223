"""Where tools come from besides the built-ins: a ``ToolSource`` (MCP servers today) hands the
engine its tools when a context starts or when it ``changed``, and describes every tool it has
for the ``tools`` command (``ToolEntry``: name, source, state)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from rollchat.tools import ARCHIVE_TOOL_NAME, Tool

BUILT_IN = "built-in"
WITH_OTHERS = "offered beside other tools, or after a compact or resume"  # a companion alone


@dataclass(frozen=True)
class ToolEntry:
    """One line of the ``tools`` listing. ``name`` is what the model calls (empty for a
    source that offers no tool, e.g. a server that failed to start); ``state`` says whether
    the model can call it and, if not, why."""

    name: str
    source: str
    state: str
    description: str = ""


class ToolSource(Protocol):
    """A provider of tools that may not be ready at once (servers starting)."""

    def waiting_for(self) -> list[str]:
        """The names of what is still starting (shown while the first message waits)."""

    def starting(self) -> list[tuple[str, float, float]]:
        """What is still starting: name, seconds since it started, its startup timeout."""

    def settle(self, seconds: float) -> bool:
        """Wait up to ``seconds`` for what is still starting; True once the first message
        need wait no longer (all ready or failed, or their time is up)."""

    def collect(self, wait: bool) -> tuple[dict[str, Tool], list[str]]:
        """The tools ready now, by name, in a stable order (waiting for those still starting
        when ``wait``), and the lines the user has not been told yet (failures)."""

    def changed(self) -> bool:
        """Whether ``collect`` would now give other tools or lines (asked before each
        message: a yes costs the request prefix once)."""

    def entries(self, offered: Mapping[str, Tool]) -> list[ToolEntry]:
        """Every tool and server of this source, given the tools the model is offered."""

    def restart(self, name: str) -> str | None:
        """Start the server ``name`` again; what to tell the user, or None: not one of ours."""


def tool_entries(tools: Mapping[str, Tool], sources: Sequence[ToolSource]) -> list[ToolEntry]:
    """The ``tools`` listing: the tools the model is offered that no source claims (built-ins),
    then each source's own entries."""
    from_sources = [entry for source in sources for entry in source.entries(tools)]
    claimed = {entry.name for entry in from_sources}
    alone = all(tool.companion for tool in tools.values())
    built_in = [ToolEntry(name, BUILT_IN if tool.source == "builtin" else tool.source,
                          WITH_OTHERS if tool.companion and alone else "ready",
                          _first_line(tool.spec.description))
                for name, tool in tools.items() if name not in claimed]
    if ARCHIVE_TOOL_NAME not in tools:
        built_in.append(ToolEntry(ARCHIVE_TOOL_NAME, BUILT_IN,
                                  "offered after a compact or resume"))
    return built_in + from_sources


def _first_line(text: str) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= 100 else line[:97] + "..."
