"""MCP servers that come and go, seen from the wire: the request a provider receives after a
server died and another joined offers no tool of the dead one (any re-collection of tools
keeps track of every server's tools)."""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path

from rollchat.engine.core import Engine, EngineSettings
from rollchat.events import Event, Notice
from rollchat.providers.base import RetryPolicy
from rollchat.providers.openai import OpenAIProvider
from rollchat.tools.mcp import McpServers
from tests.drive import drain
from tests.mcp_helpers import engine_with, servers, start, stdio, wait_for_file, wait_until
from tests.wire_servers import WireServer, openai_server

__all__ = ["openai_server", "servers"]  # the fixtures, imported for pytest


def state(source: McpServers, name: str) -> str:
    server = next(s for s in source._servers if s.name == name)
    return server.state


def offered(server: WireServer) -> list[str]:
    return [t["function"]["name"] for t in server.bodies[-1].get("tools", [])]


def test_a_dead_server_s_tools_are_not_offered_after_another_joined(
        servers, openai_server: WireServer, tmp_path: Path) -> None:
    pid_file, broken, go = tmp_path / "pid", tmp_path / "broken", tmp_path / "go"
    source = start(servers, stdio("db", "--pid-file", str(pid_file), "--crash-if", str(broken)),
                   stdio("late", "--start-when", str(go)))  # (late until the first message)
    engine = Engine(EngineSettings(
        OpenAIProvider("gpt-4o", api_key="k", base_url=openai_server.url, timeout=10),
        model="gpt-4o", system="sys", max_output_tokens=100, temperature=None,
        retry=RetryPolicy(max_retries=0), tool_sources=(source,)))

    def stop_waiting(event: Event) -> None:  # Ctrl-C while the first message waits
        if isinstance(event, Notice) and event.text.startswith("Waiting"):
            raise KeyboardInterrupt

    wait_until(lambda: state(source, "db") == "ready")
    drain(engine.chat("one"), stop_waiting)
    assert {n.split("__")[1] for n in offered(openai_server)} == {"db"}
    go.touch()
    wait_until(lambda: state(source, "late") == "ready", 30)
    drain(engine.chat("two"))  # late joins: the tools are collected again
    assert {n.split("__")[1] for n in offered(openai_server)} == {"db", "late"}
    broken.write_text("gone")  # its restarts fail
    os.kill(int(wait_for_file(pid_file)), signal.SIGKILL)
    wait_until(lambda: state(source, "db") == "failed")
    events: list[Event] = []
    drain(engine.chat("three"), events.append)
    names = offered(openai_server)
    assert names and not [n for n in names if n.startswith("mcp__db__")]
    assert any(isinstance(e, Notice) and "'db' stopped" in e.text for e in events)


def warnings(events: list[Event]) -> list[str]:
    return [e.text for e in events if isinstance(e, Notice) and e.level == "warning"]


def test_a_server_killed_while_idle_and_back_before_the_next_message_says_so(
        servers, tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    source = start(servers, stdio("db", "--pid-file", str(pid_file)),
                   restart_after=0.25)  # (the product's 1 s, a quarter as long)
    engine = engine_with(source)
    drain(engine.chat("hello"))
    pid = int(wait_for_file(pid_file))
    pid_file.unlink()
    os.kill(pid, signal.SIGKILL)
    assert int(wait_for_file(pid_file)) != pid  # restarted (after 0.25 s)
    wait_until(lambda: state(source, "db") == "ready")
    events: list[Event] = []
    turn = drain(engine.chat('use mcp__db__add {"a": 1, "b": 2}'), events.append).turn
    assert warnings(events) == ["MCP server 'db' stopped: the server exited; restarting (1 of "
                                "3); it is back: its 5 tools are offered again"]
    assert turn.tools[0].result == "3"


def test_a_server_killed_mid_call_says_why_in_the_result_and_in_one_line(
        servers, tmp_path: Path) -> None:
    pid_file, sleeping = tmp_path / "pid", tmp_path / "sleeping"
    source = start(servers, stdio("db", "--pid-file", str(pid_file), "--sleeping-file",
                                  str(sleeping)))
    engine = engine_with(source)
    drain(engine.chat("hello"))
    pid = int(wait_for_file(pid_file))

    killer = threading.Thread(target=lambda: (wait_for_file(sleeping),
                                              os.kill(pid, signal.SIGKILL)))
    killer.start()
    turn = drain(engine.chat('use mcp__db__sleep {"seconds": 60}')).turn
    killer.join()
    assert turn.tools[0].result == (
        "error: sleep on MCP server 'db' failed: the server went away during the call (it "
        "may have done part of it); 'tools' shows its state")
    wait_until(lambda: bool(source._servers[0].news))  # its exit was seen
    events: list[Event] = []
    drain(engine.chat("hello"), events.append)
    [line] = warnings(events)
    assert line.startswith("MCP server 'db' stopped: the server exited; restarting (1 of 3)")
    assert "stopped: stopped" not in line


def test_servers_still_starting_are_shown_live_with_their_time_and_timeout(
        servers, tmp_path: Path) -> None:
    from rollchat.events import ServersStarting

    go = tmp_path / "go"  # the server serves once it exists: after two live lines were drawn
    source = start(servers, stdio("late", "--start-when", str(go)))
    events: list[Event] = []

    def seen(event: Event) -> None:
        events.append(event)
        if sum(isinstance(e, ServersStarting) for e in events) == 2:
            go.touch()

    drain(engine_with(source).chat("hello"), seen)
    live = [e for e in events if isinstance(e, ServersStarting)]
    assert len(live) >= 2 and live[-1] == ServersStarting(())
    shown = [e.servers for e in live[:-1]]
    assert all(len(s) == 1 and s[0][0] == "late" and s[0][2] == 30.0 for s in shown)
    elapsed = [s[0][1] for s in shown]
    assert elapsed == sorted(elapsed) and elapsed[-1] > elapsed[0]
    after = events[events.index(live[-1]) + 1:]
    assert not [e for e in after if isinstance(e, ServersStarting)]
