"""The live line of MCP servers starting (ui/starting_servers.py): each server with its seconds
and startup_timeout, redrawn in place in a terminal, ended by the empty event; nothing drawn
without a terminal (the "Waiting for" line said it)."""

from __future__ import annotations

import io

from rich.console import Console

from rollchat.events import ServersStarting
from rollchat.ui.render import Renderer
from rollchat.ui.starting_servers import StartingLine, starting_text


def test_the_line_names_each_server_with_its_time_and_timeout() -> None:
    event = ServersStarting((("time", 3.2, 30.0), ("npm", 12.0, 120.0)))
    assert starting_text(event) == ("Starting MCP servers: time 3 s of 30, npm 12 s of 120 "
                                    "(Ctrl-C: go on without them)")


def test_drawn_live_in_a_terminal_and_gone_at_the_end() -> None:
    buf = io.StringIO()
    out = Renderer(Console(file=buf, force_terminal=True, width=120), interactive=True)
    line = StartingLine(out)
    line.show(ServersStarting((("time", 1.0, 30.0),)))
    line.show(ServersStarting((("time", 2.0, 30.0),)))
    line.show(ServersStarting(()))
    assert line._status is None
    drawn = buf.getvalue()
    assert "time 2 s of 30" in drawn


def test_nothing_drawn_without_a_terminal() -> None:
    buf = io.StringIO()
    out = Renderer(Console(file=buf, force_terminal=False), interactive=False)
    line = StartingLine(out)
    line.show(ServersStarting((("time", 1.0, 30.0),)))
    line.end()
    assert buf.getvalue() == ""
