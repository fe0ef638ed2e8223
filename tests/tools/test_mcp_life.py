"""MCP servers over a session's life, against the test server as a process of its own (forked
from the MCP tests' zygote: tests/mcp_helpers.py's zygote_command): one killed
mid-session is marked failed at once, its tools withdrawn from the next message in one line,
and restarted (with backoff, a few times, or by ``tools restart``); a late one joins once; the
startup clock starts at the server's spawn; stderr is a bounded tail; a server's children end
with it; the child's environment keeps TLS and proxy settings, not keys."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from rollchat.events import Event, Notice
from rollchat.tools import mcp as mcp_package
from rollchat.tools.children import MARK
from rollchat.tools.mcp import McpServers
from rollchat.tools.mcp.child import TAIL_BYTES, child_env
from tests.drive import drain
from tests.mcp_helpers import (
    engine_with,
    gone_within,
    http_server,
    servers,
    start,
    stdio,
    wait_for_file,
    wait_until,
)

__all__ = ["servers"]  # the fixture, imported for pytest


def warnings(events: list[Event]) -> list[str]:
    return [e.text for e in events if isinstance(e, Notice) and e.level == "warning"]


def state(source: McpServers, name: str) -> str:
    """The server's state as ``tools`` words it (``failed: why``)."""
    server = next(s for s in source._servers if s.name == name)
    return f"{server.state}: {server.reason}" if server.reason else server.state


def test_a_killed_server_is_failed_at_once_withdrawn_in_one_line_and_restarted(
        servers, tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    source = start(servers, stdio("db", "--pid-file", str(pid_file)), stdio("other"))
    engine = engine_with(source)
    assert drain(engine.chat('use mcp__db__add {"a": 1, "b": 2}')).turn.tools[0].result == "3"
    first = [spec.name for spec in engine.request([]).tools]
    pid = int(wait_for_file(pid_file))
    pid_file.unlink()
    os.kill(pid, signal.SIGKILL)
    wait_until(lambda: state(source, "db").startswith("failed: the server exited"), 5)
    assert "restarting (1 of 3)" in state(source, "db")

    events: list[Event] = []
    turn = drain(engine.chat('use mcp__db__add {"a": 1, "b": 2}'), events.append).turn
    assert warnings(events) == ["MCP server 'db' stopped: the server exited; restarting (1 of "
                                "3); its 5 tools are withdrawn"]
    assert not turn.tools  # the model was not offered them
    withdrawn = [spec.name for spec in engine.request([]).tools]
    assert withdrawn == [n for n in first if not n.startswith("mcp__db__")]
    events.clear()
    drain(engine.chat("hello"), events.append)  # nothing changed: no line, the same tools
    assert not warnings(events) and [s.name for s in engine.request([]).tools] == withdrawn

    assert int(wait_for_file(pid_file)) != pid  # restarted after 1 s
    wait_until(lambda: state(source, "db") == "ready", 30)
    turn = drain(engine.chat('use mcp__db__add {"a": 2, "b": 2}'), events.append).turn
    assert turn.tools[0].result == "4"
    assert warnings(events) == ["MCP server 'db' is ready: 5 tools offered from this message"]
    assert sorted(spec.name for spec in engine.request([]).tools) == sorted(first)


def test_restarts_stop_after_a_few_and_tools_restart_starts_it_again(
        servers, tmp_path: Path) -> None:
    pid_file, broken = tmp_path / "pid", tmp_path / "broken"
    source = start(servers, stdio("db", "--pid-file", str(pid_file), "--crash-if", str(broken)),
                   restart_after=0.25)  # (the product's 1 s, 2 s, 4 s, a quarter as long)
    engine = engine_with(source)
    drain(engine.chat("hello"))
    broken.write_text("the database is gone")
    os.kill(int(wait_for_file(pid_file)), signal.SIGKILL)
    t0 = time.monotonic()
    wait_until(lambda: "tools restart db" in state(source, "db"), 60)
    assert time.monotonic() - t0 >= 0.25 + 0.5 + 1 - 0.1  # three tries, backing off
    assert "(stderr: cannot open the database)" in state(source, "db")
    events: list[Event] = []
    drain(engine.chat("hello"), events.append)
    assert len(warnings(events)) == 1 and warnings(events)[0].startswith(
        "MCP server 'db' stopped: ")
    assert source.restart("nope") is None
    broken.unlink()
    assert source.restart("db") == ("Restarting MCP server 'db': its tools are offered from "
                                    "the first message after it is ready.")
    wait_until(lambda: state(source, "db") == "ready", 30)
    assert drain(engine.chat('use add {"a": 5, "b": 5}')).turn.tools[0].result == "10"


def test_an_http_server_that_goes_away_is_failed_and_rejoins_when_it_is_back(
        servers, tmp_path: Path) -> None:
    from rollchat.config.mcp_servers import check_server

    pid_file = tmp_path / "pid"
    with http_server("--pid-file", str(pid_file)) as url:
        source = start(servers, check_server("remote", {"url": url}, base_dir=tmp_path,
                                             origin="t"), restart_after=0.25, ping_every=0.5)
        engine = engine_with(source)
        assert drain(engine.chat('use add {"a": 1, "b": 1}')).turn.tools[0].result == "2"
        os.kill(int(wait_for_file(pid_file)), signal.SIGKILL)
        wait_until(lambda: state(source, "remote").startswith(
            "failed: the connection dropped"), 15)  # the next ping (every 0.5 s here)
        events: list[Event] = []
        drain(engine.chat("hello"), events.append)
        assert warnings(events)[0].startswith("MCP server 'remote' stopped: the connection "
                                              "dropped")
        assert not [n for n in engine.tools if n.startswith("mcp__remote__")]
        entries = {e.source for e in source.entries(engine.tools)}
        assert "built-in" not in entries
    # not rollchat's to restart: looked for past a stdio server's 3 restarts (0.25, 0.5, 1, 2
    # s ...: the product's 1, 2, 4, 8 s a quarter as long)
    wait_until(lambda: "looking for it again in 2 s" in state(source, "remote"), 60)
    port = int(url.rsplit(":", 1)[1].split("/")[0])
    with http_server(port=port):  # back on the same address: the backoff finds it
        wait_until(lambda: state(source, "remote") == "ready", 90)  # (a ceiling: the next look)
        assert drain(engine.chat('use add {"a": 2, "b": 3}')).turn.tools[0].result == "5"


def test_a_server_ready_after_the_first_message_joins_once_with_a_line(
        servers, tmp_path: Path) -> None:
    go = tmp_path / "go"  # the late server serves once it exists (after the first message)
    source = start(servers, stdio("quick"), stdio("late", "--start-when", str(go)))
    engine = engine_with(source)
    wait_until(lambda: source.waiting_for() == ["late"])

    def stop_waiting(event: Event) -> None:  # Ctrl-C while the first message waits
        if isinstance(event, Notice) and event.text.startswith("Waiting"):
            raise KeyboardInterrupt

    drain(engine.chat("hello"), stop_waiting)
    first = [spec.name for spec in engine.request([]).tools]
    assert first and all(name.startswith("mcp__quick__") for name in first)
    go.touch()
    wait_until(lambda: state(source, "late") == "ready", 30)
    events: list[Event] = []
    drain(engine.chat("hello again"), events.append)
    assert warnings(events) == ["MCP server 'late' is ready: 5 tools offered from this message"]
    after = [spec.name for spec in engine.request([]).tools]
    assert after[:len(first)] == first and any(n.startswith("mcp__late__") for n in after)
    events.clear()
    drain(engine.chat("and now?"), events.append)
    assert [spec.name for spec in engine.request([]).tools] == after and not warnings(events)


def test_a_server_not_ready_at_the_first_message_gets_one_line(servers, monkeypatch) -> None:
    monkeypatch.setattr(mcp_package, "FIRST_WAIT", 0.5)
    monkeypatch.setattr(mcp_package, "STOP_SECONDS", 0.5)  # (it cannot stop while it sleeps)
    source = start(servers, stdio("late", "--slow-start", "20"))
    events: list[Event] = []
    drain(engine_with(source).chat("hello"), events.append)
    assert warnings(events) == ["MCP server 'late' is still starting (startup_timeout 30 s); "
                                "its tools join when it is ready"]
    source.close()  # here, while STOP_SECONDS is short (the fixture closes it after)


def test_the_startup_clock_starts_after_the_sdk_import_and_the_child_env_leaves_keys_out(
        servers, monkeypatch) -> None:
    # both facts of a server's spawn, from one start (each start is seconds of CPU)
    parent = {"SSL_CERT_FILE": "/etc/ca.pem", "NODE_EXTRA_CA_CERTS": "/etc/extra.pem",
              "HTTPS_PROXY": "http://proxy:3128", "no_proxy": "localhost",
              "OPENAI_API_KEY": "sk-secret", "ANTHROPIC_API_KEY": "sk-ant"}
    assert {k: v for k, v in child_env(parent, {"OWN": "1"}).items() if k != MARK} == {
        "SSL_CERT_FILE": "/etc/ca.pem", "NODE_EXTRA_CA_CERTS": "/etc/extra.pem",
        "HTTPS_PROXY": "http://proxy:3128", "no_proxy": "localhost", "OWN": "1"}
    import_sdk = mcp_package.import_sdk
    done: list[float] = []

    def slow_import() -> None:  # a cold SDK import takes seconds on a loaded machine
        import_sdk()
        time.sleep(0.2)  # (a clock started before the import is at least this early)
        done.append(time.monotonic())

    monkeypatch.setattr(mcp_package, "import_sdk", slow_import)
    source = start(servers, stdio("quick", startup_timeout=60), env=parent)
    tools, lines = source.collect(wait=True)
    assert tools and not lines
    server = source._servers[0]
    assert server.deadline - server.config.startup_timeout >= done[0]
    env = tools["mcp__quick__env"]
    assert [env.run({"name": n}) for n in ("SSL_CERT_FILE", "HTTPS_PROXY", "OPENAI_API_KEY")] \
        == ["/etc/ca.pem", "http://proxy:3128", "<unset>"]


def test_stderr_is_kept_as_a_bounded_tail(servers) -> None:
    source = start(servers, stdio("noisy", "--stderr-mb", "8"))
    tools, _ = source.collect(wait=True)
    assert tools
    tail = source._servers[0].stderr
    assert tail is not None
    wait_until(lambda: tail.last_line() == "the last line", 10)
    assert len(tail.text()) <= TAIL_BYTES


def test_a_server_s_own_children_end_with_it(servers, tmp_path: Path) -> None:
    pid_file, child_file = tmp_path / "pid", tmp_path / "child"
    # a new interpreter (not forked by the zygote): its process group is the point
    source = start(servers, stdio("parent", "--pid-file", str(pid_file), "--odd", real=True))
    tools, _ = source.collect(wait=True)
    child = int(tools["mcp__parent__spawn"].run({"pid_file": str(child_file)}))
    os.kill(int(wait_for_file(pid_file)), signal.SIGKILL)  # the server dies, its child not
    # seen at once, though the child holds the server's stdout open (its exit tells: pidfd)
    wait_until(lambda: state(source, "parent").startswith("failed: the server exited"), 3)
    assert gone_within(child, 10)
    second = tmp_path / "second"  # and on a clean stop, after the restart
    wait_until(lambda: state(source, "parent") == "ready", 30)
    child = int(tools["mcp__parent__spawn"].run({"pid_file": str(second)}))
    source.close()
    assert gone_within(child, 10)
