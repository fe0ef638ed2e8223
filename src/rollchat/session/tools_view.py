"""The chat's tools as the ``tools`` command lists them, read from the engine into values (each
tool's source, state, approval rule and whether the model is offered it): the UI reads these and
never the engine."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from rollchat.tools.sources import ToolEntry, tool_entries

if TYPE_CHECKING:
    from rollchat.engine.core import Engine


@dataclass(frozen=True)
class ToolRow:
    """One line of the listing: the entry, the approval rule of a tool the agent has (None for
    one it does not have yet), and whether the model is offered it now."""

    entry: ToolEntry
    rule: str | None
    offered: bool


@dataclass(frozen=True)
class ToolsView:
    """The listing's rows, the approval mode and the tool rounds a turn may take."""

    rows: tuple[ToolRow, ...]
    mode: str
    max_rounds: int


def tools_view(engine: Engine) -> ToolsView:
    """The ``tools`` listing of ``engine`` (see tools.sources.tool_entries)."""
    gate, offered = engine.gate, {spec.name for spec in engine.offered()}
    rows = []
    for entry in tool_entries(engine.tools, engine.tool_sources):
        tool = engine.tools.get(entry.name)
        rows.append(ToolRow(entry, gate.rule(tool) if tool is not None else None,
                            entry.name in offered))
    return ToolsView(tuple(rows), gate.mode, engine.max_tool_rounds)


def restart_server(engine: Engine, name: str) -> str | None:
    """``tools restart NAME``: the MCP server ``name`` started again; what to tell the user, or
    None when no source of the engine has a server of that name."""
    for source in engine.tool_sources:
        told = source.restart(name)
        if told is not None:
            return told
    return None
