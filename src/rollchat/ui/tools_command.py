"""The in-chat ``tools`` command: every tool the agent has or may get, with its source
(built-in, mcp:SERVER) and its state (ready, starting, failed and why, not started until the
project file is trusted). The rows come from ``tools.sources.tool_entries``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rollchat.text import plural
from rollchat.tools.sources import tool_entries

if TYPE_CHECKING:
    from rollchat.ui.app import ChatApp

NO_TOOL = "(no tools)"


def run_tools(app: ChatApp, arg: str) -> bool:
    engine = app.session.engine
    entries = tool_entries(engine.tools, engine.tool_sources)
    names = [e.name or NO_TOOL for e in entries]
    width = max((len(n) for n in names), default=0)
    source_width = max((len(e.source) for e in entries), default=0)
    names_offered = {spec.name for spec in engine.offered()}
    offered = sum(1 for e in entries if e.name in names_offered)
    app.out.info(f"Tools: {plural(offered, 'tool')} offered to the model")
    for name, entry in zip(names, entries, strict=True):
        line = f"  {name:<{width}}  {entry.source:<{source_width}}  {entry.state}"
        app.out.info(line)
        if entry.description:
            app.out.dim(f"  {'':<{width}}  {'':<{source_width}}  {entry.description}")
    return False
