"""MCP servers as tool sources, against the test server (written with the SDK's MCPServer)
run as a stdio process of its own (forked from the MCP tests' zygote: tests/mcp_helpers.py's
zygote_command) and over streamable HTTP on 127.0.0.1: the engine calls their
tools like any other, errors come back as error results, timeouts and Ctrl-C cancel a call,
a failed server costs one line (its life after that: test_mcp_life.py)."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from rollchat.config.mcp_servers import check_server
from rollchat.events import Event, Notice
from rollchat.tools.mcp import McpServers, McpToolError
from tests.drive import drain
from tests.mcp_helpers import (
    SERVER,
    engine_with,
    gone_within,
    http_server,
    running,
    servers,
    start,
    stdio,
    wait_for_file,
    zygote_command,
)

__all__ = ["servers"]  # the fixture, imported for pytest


SHARED = pytest.mark.xdist_group("mcp-tools-shared")  # its tests: one worker


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[McpServers, Path]]:
    """One test server for the tests that only call it (each start is seconds of CPU): run
    in a folder of its own, with env settings and a parent environment given, while this
    process holds a secret the child must not get; stopped at the module's end, even after a
    failure. Yields it and its folder."""
    where = tmp_path_factory.mktemp("cwd")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("ROLLCHAT_TEST_SECRET", "s3cret")
        source = McpServers([stdio(env={"GREETING": "${HELLO:-hi}",
                                        "OTHER": "${UNSET_VAR:-fallback}"},
                                   cwd=str(where))], {"HELLO": "hey"})
        with running(source):
            yield source, where


def test_a_stdio_tool_is_called_by_the_engine_like_any_other(servers, tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    source = start(servers, stdio("testing", "--pid-file", str(pid_file)))
    engine = engine_with(source)
    events: list[Event] = []
    turn = drain(engine.chat('use add {"a": 2, "b": 40}'), events.append).turn
    assert [t.result for t in turn.tools] == ["42"]
    assert turn.tools[0].call.name == "mcp__testing__add"
    assert "42" in turn.assistant
    names = [spec.name for spec in engine.request([]).tools]
    assert names == sorted(names) and "mcp__testing__add" in names  # a stable order
    assert not [e for e in events if isinstance(e, Notice) and e.level == "warning"]
    pid = int(wait_for_file(pid_file))
    source.close()
    assert gone_within(pid, 5)


@SHARED
def test_an_is_error_result_goes_back_to_the_model_as_an_error(shared) -> None:
    engine = engine_with(shared[0])
    turn = drain(engine.chat('use fail {"message": "disk full"}')).turn
    error = "error: Error executing tool fail: disk full"  # the server's own wording
    assert turn.tools[0].result == error
    tool_message = [m for m in engine.context.messages if m.role == "tool"][-1]
    assert tool_message.content == error
    assert "could not use" in turn.assistant  # the model was told it failed


def test_include_and_exclude_choose_the_tools(servers) -> None:
    engine = engine_with(start(servers, stdio(include_tools=["add", "s*", "nothing*"],
                                              exclude_tools=["sleep"])))
    events: list[Event] = []
    drain(engine.chat("hello"), events.append)
    assert list(engine.tools) == ["mcp__testing__add"]
    warnings = [e.text for e in events if isinstance(e, Notice) and e.level == "warning"]
    assert warnings == ["MCP server 'testing': include_tools nothing* matched no tool"]


def test_a_call_past_its_timeout_is_cancelled_and_the_server_goes_on(servers) -> None:
    # 3 s: far above a quick call's round trip on a loaded machine (0.5 s once timed out the
    # add below at load 24), far below the sleep
    engine = engine_with(start(servers, stdio(call_timeout=3)))
    drain(engine.chat("hello"))  # the tools are collected: the clock times the call alone
    t0 = time.monotonic()
    turn = drain(engine.chat('use sleep {"seconds": 60}')).turn
    assert time.monotonic() - t0 < 40  # (not the 60 s)
    assert turn.tools[0].result == ("error: sleep on MCP server 'testing' timed out after "
                                    "3 s")
    assert drain(engine.chat('use add {"a": 1, "b": 1}')).turn.tools[0].result == "2"


def test_ctrl_c_stops_a_call_and_the_turn_is_kept_as_interrupted(servers,
                                                                 tmp_path: Path) -> None:
    """The Ctrl-C is sent once the server is inside the call (one sent 1 s after the start
    could come, on a loaded machine, before the call was made, and test nothing of it)."""
    sleeping = tmp_path / "sleeping"
    engine = engine_with(start(servers, stdio("testing", "--sleeping-file", str(sleeping))))
    drain(engine.chat("hello"))  # the tools are collected
    ctrl_c = threading.Thread(  # a real Ctrl-C, to this process: run in the main thread
        target=lambda: (wait_for_file(sleeping, 60), os.kill(os.getpid(), signal.SIGINT)))
    ctrl_c.start()
    t0 = time.monotonic()
    turn = drain(engine.chat('use sleep {"seconds": 30}')).turn
    ctrl_c.join()
    assert turn.status == "interrupted" and time.monotonic() - t0 < 25  # (not the 30 s)
    assert turn.tools[0].result.startswith("[interrupted by user")
    assert drain(engine.chat('use add {"a": 3, "b": 4}')).turn.tools[0].result == "7"


def test_a_server_that_does_not_start_in_time_costs_one_line_and_is_stopped(
        servers, tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    # its process id written by a shell that then becomes the server: Python's own start
    # (--pid-file) could come after the 1.5 s on a loaded machine, and with it no pid (CI)
    slow = check_server("slow", {"command": "/bin/sh", "args": [
        "-c", 'echo $$ > "$1"; shift; exec "$@"', "sh", str(pid_file),
        *zygote_command(SERVER, "--slow-start", "30")], "startup_timeout": 1.5},
        base_dir=Path.cwd(), origin="test")
    source = start(servers, slow, stdio("quick"))
    engine = engine_with(source)
    events: list[Event] = []
    turn = drain(engine.chat('use add {"a": 1, "b": 2}'), events.append).turn
    assert turn.tools[0].result == "3"  # the quick server's tool
    lines = [e.text for e in events if isinstance(e, Notice)]
    assert "Waiting for MCP servers to start: slow, quick" in lines[0]
    assert ("MCP server 'slow' did not start: did not start within 1.5 s; the chat goes on "
            "without its tools; raise its startup_timeout (now 1.5 s) or run 'tools restart "
            "slow'") in lines
    assert gone_within(int(wait_for_file(pid_file)), 5)
    assert all(not name.startswith("mcp__slow") for name in engine.tools)


def test_a_server_that_crashes_says_why_in_one_line(servers) -> None:
    tools, lines = start(servers, stdio("db", "--crash")).collect(wait=True)
    assert tools == {}
    assert len(lines) == 1 and lines[0].startswith("MCP server 'db' did not start: ")
    assert "(stderr: cannot open the database)" in lines[0]


@SHARED
def test_the_child_gets_a_minimal_environment_plus_env(shared) -> None:
    assert os.environ["ROLLCHAT_TEST_SECRET"] == "s3cret"  # (set before it started)
    engine = engine_with(shared[0])
    results = [drain(engine.chat(f'use env {{"name": "{name}"}}')).turn.tools[0].result
               for name in ("GREETING", "OTHER", "ROLLCHAT_TEST_SECRET", "PATH")]
    assert results[:3] == ["hey", "fallback", "<unset>"] and results[3] != "<unset>"


def test_a_variable_not_set_stops_only_that_server(servers) -> None:
    tools, lines = start(servers, stdio("keyed", env={"API_TOKEN": "${NOPE_TOKEN}"}),
                         stdio("plain")).collect(wait=True)
    assert lines == ["MCP server 'keyed' did not start: ${NOPE_TOKEN} is not set in the "
                     "environment; the chat goes on without its tools; set it and start "
                     "rollchat again"]
    assert "mcp__plain__add" in tools


@SHARED
def test_cwd_is_where_the_server_runs(shared) -> None:
    source, where = shared
    assert drain(engine_with(source).chat("use cwd")).turn.tools[0].result == str(where)


def test_streamable_http_with_a_header_from_the_environment(servers) -> None:
    from rollchat.config.mcp_servers import check_server

    with http_server("--require-header", "Authorization=Bearer t0k") as url:
        good = check_server("remote", {"url": url, "headers": {
            "Authorization": "Bearer ${REMOTE_TOKEN}"}}, base_dir=Path.cwd(), origin="t")
        bad = check_server("wrong", {"type": "http", "url": url, "headers": {
            "Authorization": "Bearer ${WRONG_TOKEN:-nope}"}}, base_dir=Path.cwd(), origin="t")
        source = start(servers, good, bad, env={"REMOTE_TOKEN": "t0k"})
        engine = engine_with(source)
        events: list[Event] = []
        turn = drain(engine.chat('use add {"a": 20, "b": 22}'), events.append).turn
        assert turn.tools[0].result == "42"
        warnings = [e.text for e in events if isinstance(e, Notice) and e.level == "warning"]
        assert len(warnings) == 1, warnings
        assert warnings[0].startswith(f"MCP server 'wrong' did not start: {url}: ")
        assert "nope" not in warnings[0]
        entries = {e.source: e.state for e in source.entries(engine.tools)}
        assert entries["mcp:remote"] == "ready" and entries["mcp:wrong"].startswith("failed: ")
        add = engine.tools["mcp__remote__add"]
        source.close()
        with pytest.raises(McpToolError, match="MCP server 'remote' is not running"):
            add.run({"a": 1, "b": 1})
        drain(engine.chat("hello"), events.append)  # stopped: its tools are withdrawn
        assert not [name for name in engine.tools if name.startswith("mcp__remote__")]
