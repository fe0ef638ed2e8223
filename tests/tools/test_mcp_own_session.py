"""What a stdio MCP server started in a session of its own (setsid) ends with the server
(issue 33 item 5): found by the mark rollchat puts in the server's environment. Against the
test server as a real process (not forked by the zygote: its children are the point)."""

from __future__ import annotations

import os
import signal
from pathlib import Path

from tests.mcp_helpers import gone_within, servers, start, stdio, wait_for_file, wait_until

__all__ = ["servers"]  # the fixture, imported for pytest


def test_a_server_s_child_in_its_own_session_ends_with_it(servers, tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    source = start(servers, stdio("parent", "--pid-file", str(pid_file), "--odd", real=True))
    tools, _ = source.collect(wait=True)
    spawn = tools["mcp__parent__spawn"]
    first = int(spawn.run({"pid_file": str(tmp_path / "a"), "own_session": True}))
    assert os.getpgid(first) == first  # out of the server's group
    os.kill(int(wait_for_file(pid_file)), signal.SIGKILL)  # the server dies, its child not
    assert gone_within(first, 30)
    server = source._servers[0]
    # restarted (the child can be gone while the old connection still reads "ready"): then,
    # on a clean stop,
    wait_until(lambda: server.restarts >= 1 and server.state == "ready", 30)
    second = int(spawn.run({"pid_file": str(tmp_path / "b"), "own_session": True}))
    source.close()
    assert gone_within(second, 30)


def test_the_mark_ends_them_when_the_server_s_pid_was_not_found(
        servers, tmp_path: Path, monkeypatch) -> None:
    """The server's pid is looked up in /proc (its stderr pipe), which can miss it (not Linux,
    or a listing read while it changed): what it started in a session of its own is still
    ended, by the mark the connection gave it (read back from the found pid, it was lost)."""
    import rollchat.tools.mcp.serve as serve

    monkeypatch.setattr(serve, "child_with_stderr", lambda inode: None)
    pid_file = tmp_path / "pid"
    source = start(servers, stdio("parent", "--pid-file", str(pid_file), "--odd", real=True))
    tools, _ = source.collect(wait=True)
    child = int(tools["mcp__parent__spawn"].run({"pid_file": str(tmp_path / "a"),
                                                 "own_session": True}))
    os.kill(int(wait_for_file(pid_file)), signal.SIGKILL)
    assert gone_within(child, 30)
