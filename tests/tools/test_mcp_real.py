"""Real MCP servers nobody here wrote: ``mcp-server-time`` from PyPI (in the test extras, so it
always runs) and the reference ``@modelcontextprotocol/server-everything`` from npm over stdio
and streamable HTTP (skipped, saying why, where node or npm is missing). Calls, errors,
task-only tools, resource links, progress, the child's environment, and a server killed
mid-session: failed at once, withdrawn, restarted."""

from __future__ import annotations

import os
import signal
from pathlib import Path

from rollchat.config.mcp_servers import check_server
from rollchat.domain import ToolResult, image_marker
from rollchat.events import Event, Notice
from rollchat.tools.mcp import McpServers
from tests.drive import drain
from tests.mcp_helpers import (
    engine_with,
    everything_http,
    everything_stdio,
    gone_within,
    servers,
    shared_cache,
    start,
    wait_until,
    zygote_command,
)

__all__ = ["servers"]  # the fixture, imported for pytest

# (no xdist group: each test starts its own server, and everything_entry's file lock makes
# the npm install one for parallel workers; a group put all of them on one worker)


def warnings(events: list[Event]) -> list[str]:
    return [e.text for e in events if isinstance(e, Notice) and e.level == "warning"]


def server_pid(source: McpServers, name: str) -> int:
    from rollchat.tools.mcp.child import child_with_stderr

    server = next(s for s in source._servers if s.name == name)
    assert server.stderr is not None
    pid = child_with_stderr(server.stderr.inode)
    assert pid is not None
    return pid


def time_server(name: str = "time") -> object:
    """``python -m mcp_server_time``, forked from the zygote that has the SDK imported (its
    own import is seconds of CPU a start); its pid (server_pid) is the launcher's, which
    stands for it (tests/mcp_launch.py)."""
    command = zygote_command("-m", "mcp_server_time", "--local-timezone", "UTC")
    return check_server(name, {"command": command[0], "args": command[1:]},
                        base_dir=Path.cwd(), origin="t")


def test_mcp_server_time_from_pypi_answers_is_restarted_when_killed_and_errs(servers) -> None:
    # one start of the server for both facts (each start of a Python server is seconds of CPU)
    source = start(servers, time_server())  # (restarted after 1 s: the line is said first)
    engine = engine_with(source)
    turn = drain(engine.chat('use get_current_time {"timezone": "Europe/Paris"}')).turn
    assert '"timezone":"Europe/Paris"' in turn.tools[0].result.replace(" ", "")
    # killed mid-session: withdrawn in one line, restarted
    pid = server_pid(source, "time")
    os.kill(pid, signal.SIGKILL)
    wait_until(lambda: source._servers[0].state != "ready", 5)
    events: list[Event] = []
    drain(engine.chat("hello"), events.append)
    assert warnings(events) == ["MCP server 'time' stopped: the server exited; restarting (1 "
                                "of 3); its 2 tools are withdrawn"]
    assert not engine.tools
    wait_until(lambda: source._servers[0].state == "ready", 30)
    turn = drain(engine.chat('use get_current_time {"timezone": "UTC"}'), events.append).turn
    assert '"timezone":"UTC"' in turn.tools[0].result.replace(" ", "")
    assert server_pid(source, "time") != pid
    turn = drain(engine.chat('use convert_time {"source_timezone": "Mars/Olympus", '
                             '"time": "10:00", "target_timezone": "UTC"}')).turn
    assert turn.tools[0].result.startswith("error: ") and "Mars/Olympus" in turn.tools[0].result


def test_server_everything_over_stdio_then_stopped_with_its_process_gone(servers) -> None:
    shown: list[str] = []
    parent = {"HTTPS_PROXY": "http://proxy.example:3128", "OPENAI_API_KEY": "sk-secret",
              "npm_config_registry": "http://127.0.0.1:9/npm/", "UV_INDEX_URL": "http://uv.test",
              "PIP_INDEX_URL": "https://user:pw-secret@pip.test/simple",
              "npm_config__authToken": "npm-secret", "UV_INDEX_X_PASSWORD": "uv-secret"}
    source = start(servers, everything_stdio(), env=parent,
                   on_progress=lambda tool, text: shown.append(text))
    engine = engine_with(source)
    events: list[Event] = []
    turn = drain(engine.chat('use get-sum {"a": 2, "b": 40}'), events.append).turn
    assert "42" in turn.tools[0].result
    assert warnings(events) == ["MCP server 'everything': 1 tool left out "
                                "(simulate-research-query): they run only as tasks, which "
                                "rollchat does not drive"]
    links = drain(engine.chat('use get-resource-links {"count": 2}')).turn.tools[0].result
    uri = links.split("[resource: ", 2)[2].split(" ")[0]  # the second: a text resource
    text = drain(engine.chat(f'use read_resource {{"uri": "{uri}"}}')).turn.tools[0].result
    assert text and not text.startswith("error")
    shot = drain(engine.chat("use get-tiny-image {}")).turn  # an image content: an image
    [result] = [b for b in shot.blocks if isinstance(b, ToolResult)]
    [picture] = result.images
    assert picture.media_type == "image/png" and picture.data  # an image, not a text line
    # its place between the server's two texts, kept (issue 35.5)
    before, marker, after = result.content.split("\n")
    assert marker == image_marker(1, picture) and before and after, result.content
    sent = [m for m in engine.context.messages if m.role == "tool"][-1]
    assert sent.images == (picture,)  # to the model as an image (a line for the offline one)
    tools = engine.tools
    done = tools["mcp__everything__trigger-long-running-operation"].run(
        {"duration": 3, "steps": 3})
    assert "completed" in done and shown and shown[0] == "1/3"  # no message: the counts
    env = tools["mcp__everything__get-env"].run({})
    assert "proxy.example:3128" in env and "sk-secret" not in env
    assert "127.0.0.1:9/npm/" in env and "uv.test" in env  # what npx and uvx read
    assert not [s for s in ("pw-secret", "npm-secret", "uv-secret") if s in env]
    # and stopped with its process gone (the same start: each node start is seconds of CPU)
    pid = server_pid(source, "everything")
    source.close()
    assert gone_within(pid, 10)


def test_server_everything_over_streamable_http_killed_mid_session(servers) -> None:
    with everything_http() as (url, process):
        config = check_server("everything", {"url": url}, base_dir=Path.cwd(), origin="t")
        source = start(servers, config, ping_every=0.5)  # (the product pings every 5 s)
        engine = engine_with(source)
        assert "42" in drain(engine.chat('use get-sum {"a": 40, "b": 2}')).turn.tools[0].result
        process.kill()
        process.wait(10)
        wait_until(lambda: source._servers[0].state != "ready", 15)  # the next ping
        events: list[Event] = []
        drain(engine.chat("hello"), events.append)
        assert warnings(events)[0].startswith("MCP server 'everything' stopped: the "
                                              "connection dropped")
        assert not [n for n in engine.tools if n.startswith("mcp__everything__")]



def test_the_npm_install_is_shared_by_the_tests_not_made_in_each_test_s_home() -> None:
    # each test has a HOME of its own (conftest): a cache under it was an install a test
    assert not shared_cache().is_relative_to(Path.home())
