"""The in-chat ``tools`` command: every tool the agent has or may get, with its source
(built-in, agent, skills, mcp:SERVER), its state (ready, starting, failed and why, not started
until the project file is trusted) and what a call needs (the approval rule). The rows come from
``tools.sources.tool_entries``. ``tools verbose`` / ``tools quiet``: how calls are shown;
``tools restart SERVER``: an MCP server started again."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rollchat.errors import UsageError
from rollchat.text.wording import plural

if TYPE_CHECKING:
    from rollchat.ui.app import ChatApp

NO_TOOL = "(no tools)"


TOOLS_ARGS = ("verbose", "quiet", "restart")
USAGE = "usage: tools [verbose|quiet|restart SERVER]"


def run_tools(app: ChatApp, arg: str) -> bool:
    word, _, rest = arg.strip().partition(" ")
    word = word.lower()
    if word == "restart":
        _restart(app, rest.strip())
        return False
    if word:
        if word not in TOOLS_ARGS or rest.strip():
            raise UsageError(USAGE)
        app.out.show_tools = word == "verbose"
        app.out.info("Tool calls are shown in full (arguments and results)." if
                     app.out.show_tools else "Tool calls are shown compactly.")
        return False
    view = app.session.tools_view()
    names = [row.entry.name or NO_TOOL for row in view.rows]
    width = max((len(n) for n in names), default=0)
    source_width = max((len(row.entry.source) for row in view.rows), default=0)
    offered = sum(1 for row in view.rows if row.offered)
    app.out.info(f"Tools: {plural(offered, 'tool')} offered to the model (approval: "
                 f"{view.mode}; at most {view.max_rounds} rounds of tool calls per turn)")
    for name, row in zip(names, view.rows, strict=True):
        entry = row.entry
        rule = f"  {row.rule}" if row.rule is not None else ""
        line = f"  {name:<{width}}  {entry.source:<{source_width}}  {entry.state}{rule}"
        app.out.info(line)
        if entry.description:
            column = width + source_width + 6
            app.out.line((f"{'':<{column}}{entry.description}", "dim"), hang=column)
    return False


def _restart(app: ChatApp, name: str) -> None:
    """``tools restart SERVER``: an MCP server started again (its tools join when ready)."""
    if not name:
        raise UsageError(USAGE)
    told = app.session.restart_tool_server(name)
    if told is None:
        raise UsageError(f"no MCP server named {name!r} (the 'tools' listing names them)")
    app.out.info(told)
