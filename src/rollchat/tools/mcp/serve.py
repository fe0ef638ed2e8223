"""One MCP server's connection, on the official ``mcp`` SDK: connect (stdio or streamable HTTP),
list its tools, then watch it until rollchat stops it or it goes away (exit, dropped link)."""

# A stdio server that exits is seen at once: its process's pidfd (Linux) becomes readable, and
# its stdout ends (unless a child it left holds it open). A streamable HTTP server has no such
# stream while idle, so it is pinged every PING_SECONDS (and at once after a call failed); a
# ping that fails means the connection dropped. Either way the server is marked failed and its tools
# are withdrawn from the next request (tools/mcp/__init__.py decides about restarts).

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rollchat.config.mcp_servers import McpServerConfig
from rollchat.errors import ConfigError
from rollchat.text.wording import redact_url, redact_urls
from rollchat.tools.mcp.child import (
    StderrTail,
    child_env,
    child_with_stderr,
    end_server,
    new_mark,
)

if TYPE_CHECKING:
    from mcp import Client

CONNECTION_CLOSED = -32000  # the SDK's code for a connection that ended
PING_SECONDS = 5.0  # how often an idle HTTP server is asked whether it is still there


class Dropped(Exception):
    """The server exited or its connection dropped while it was ready."""


@dataclass
class Spawned:
    """A stdio server's process as its connection knows it: the mark in its environment (its
    own, set before it starts) and its pid (its process group), when it was found."""

    mark: str = ""
    pid: int | None = None


@dataclass
class Server:
    """One server's state, shared by the loop thread (which changes it, under the owner's
    lock) and the chat's thread (which reads it)."""

    config: McpServerConfig
    state: str = "not started"  # starting | ready | failed | held | stopped
    reason: str = ""
    client: Client | None = None
    tools: dict[str, Any] = field(default_factory=dict)  # exposed name -> the SDK's Tool
    reads_resources: bool = False
    unmatched: list[str] = field(default_factory=list)
    settled: threading.Event = field(default_factory=threading.Event)  # ready or failed
    deadline: float = 0.0  # time.monotonic() by which it must be ready (from its spawn)
    stop: asyncio.Event | None = None
    check: asyncio.Event | None = None  # set: ping now (a call failed)
    task: asyncio.Task[None] | None = None
    stderr: StderrTail | None = None
    restarts: int = 0  # automatic restarts since it was last started by hand
    restart_now: bool = False  # `tools restart NAME` while it runs
    ever_ready: bool = False
    told: bool = False  # its failure was told (a new attempt tells again)
    news: list[str] = field(default_factory=list)  # why it stopped, not told yet (a restart
    # that came back before the next message still gets its line)

    @property
    def name(self) -> str:
        return self.config.name


async def connect(server: Server, env: dict[str, str],
                  ready: Callable[[Client, list[Any], bool], None], *,
                  ping_every: float = PING_SECONDS, **callbacks: Any) -> None:
    """Connect to ``server``, hand its client and tool listing to ``ready``, then wait until
    ``server.stop`` is set (returns) or the server goes away (raises Dropped; an idle HTTP
    server is pinged every ``ping_every`` seconds).
    ``callbacks``: the Client's (sampling, elicitation), which declare those capabilities."""
    from mcp import Client
    from mcp.types import Implementation

    from rollchat import __version__
    config = server.config.expanded(env)
    gone = asyncio.Event()
    spawned = Spawned()
    try:
        client = Client(_transport(config, server, env, gone.set, spawned), cache=None,
                        client_info=Implementation(name="rollchat", version=__version__),
                        **callbacks)
        async with client:
            ready(client, await _list_tools(client), await _has_resources(client))
            await _watch(server, client, gone, ping_every)
    finally:
        if spawned.mark:  # the server's own children, when it left them behind
            await asyncio.to_thread(end_server, spawned.pid, spawned.mark)


async def _watch(server: Server, client: Client, gone: asyncio.Event,
                 ping_every: float) -> None:
    assert server.stop is not None and server.check is not None
    stop, check = server.stop, server.check
    while not stop.is_set():
        waits = [asyncio.ensure_future(e.wait()) for e in (stop, gone, check)]
        await asyncio.wait(waits, timeout=ping_every, return_when=asyncio.FIRST_COMPLETED)
        for wait in waits:
            wait.cancel()
        if stop.is_set():
            return
        if gone.is_set():
            raise Dropped("the server exited" if server.config.transport == "stdio"
                          else "the connection dropped")
        check.clear()
        if server.config.transport == "http":
            await _probe(client)


async def _probe(client: Client) -> None:
    """A ping: any answer, an error one too (2026-07-28 servers dropped ``ping``), means the
    server is there; no answer within PING_SECONDS, or a transport error, means it is not."""
    from mcp.shared.exceptions import MCPError

    try:
        await asyncio.wait_for(client.session.send_ping(), PING_SECONDS)
    except MCPError as exc:
        if exc.error.code == CONNECTION_CLOSED:
            raise Dropped("the connection dropped") from None
    except Exception as exc:
        raise Dropped(f"the connection dropped ({reason(exc, None)})") from None


def _transport(config: McpServerConfig, server: Server, env: dict[str, str],
               on_eof: Callable[[], None], spawned: Spawned) -> Any:
    """An async context manager yielding the streams the client talks through, watched: the
    end of the server's stream calls ``on_eof``."""

    @asynccontextmanager
    async def opened() -> AsyncIterator[Any]:
        if config.transport == "stdio":
            from mcp import StdioServerParameters
            from mcp.client.stdio import stdio_client

            assert config.command is not None
            tail = server.stderr = StderrTail()
            spawned.mark = new_mark()
            unwatch: Callable[[], None] = _nothing
            params = StdioServerParameters(command=config.command, args=list(config.args),
                                           env=child_env(env, dict(config.env),
                                                         spawned.mark),
                                           cwd=config.cwd)
            try:
                async with stdio_client(params, errlog=tail.writer) as streams:
                    tail.close_writer()  # the child holds its own copy now
                    pid = child_with_stderr(tail.inode)
                    if pid is not None:
                        spawned.pid = pid  # its own session: the group id is its pid
                        unwatch = _on_exit(pid, on_eof)
                    async with _watched(streams, on_eof) as watched:
                        yield watched
            finally:
                unwatch()
                tail.close_writer()
        elif config.transport == "http":
            import httpx2
            from mcp.client.streamable_http import streamable_http_client

            assert config.url is not None
            async with httpx2.AsyncClient(headers=dict(config.headers),
                                          timeout=httpx2.Timeout(30.0, read=300.0)) as http, \
                    streamable_http_client(config.url, http_client=http) as streams, \
                    _watched(streams, on_eof) as watched:
                yield watched
        else:
            raise ConfigError(f"MCP server {config.name!r}: the {config.transport} "
                              "transport is not supported (use stdio or streamable HTTP)")

    return opened()


def _on_exit(pid: int, call: Callable[[], None]) -> Callable[[], None]:
    """Have ``call`` called on the loop when process ``pid`` exits (Linux: a pidfd), even
    while a child it left behind keeps its stdout open; returns the undo."""
    loop = asyncio.get_running_loop()
    try:
        fd = os.pidfd_open(pid)
    except (AttributeError, OSError):  # not Linux, or it is gone already: stdout's end tells
        return _nothing

    def fire() -> None:
        loop.remove_reader(fd)
        call()

    def undo() -> None:
        loop.remove_reader(fd)
        os.close(fd)

    loop.add_reader(fd, fire)
    return undo


def _nothing() -> None:
    pass


@asynccontextmanager
async def _watched(streams: Any, on_eof: Callable[[], None]) -> AsyncIterator[Any]:
    """The transport's streams, with the read side passed through a pump that calls
    ``on_eof`` when the server's side ends."""
    import anyio

    read, write = streams
    send, receive = anyio.create_memory_object_stream[Any](0)

    async def pump() -> None:
        with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError,
                                 anyio.EndOfStream):
            async with send:
                async for item in read:
                    await send.send(item)
        on_eof()

    async with anyio.create_task_group() as group:
        group.start_soon(pump)
        try:
            yield receive, write
        finally:
            group.cancel_scope.cancel()


async def _has_resources(client: Client) -> bool:
    """Whether the server lists resources (or templates): then the model gets a tool to read
    them, so the links its tools return can be followed."""
    if getattr(client.server_capabilities, "resources", None) is None:
        return False
    with contextlib.suppress(Exception):  # a server that declares but cannot list: none
        if (await client.list_resources()).resources:
            return True
        return bool((await client.list_resource_templates()).resource_templates)
    return False


async def _list_tools(client: Client) -> list[Any]:
    tools: list[Any] = []
    cursor: str | None = None
    for _ in range(100):  # pages; a server that never stops paging is cut off
        page = await client.list_tools(cursor=cursor)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if not cursor:
            break
    return tools


def failure(server: Server, exc: BaseException) -> str:
    """Why a server failed, in one line (an HTTP server's URL first, credentials removed)."""
    if isinstance(exc, ConfigError):
        return str(exc).partition(": ")[2] or str(exc)
    config = server.config
    if server.stderr is not None:
        server.stderr.finish(0.5)
    where = (f"{redact_url(config.url)}: " if config.transport == "http" and config.url
             and "${" not in config.url else "")
    return where + reason(exc, server.stderr)


def reason(exc: BaseException, stderr: StderrTail | None) -> str:
    """One line about a failure: the innermost error (task groups wrap them), and the last
    line the server wrote to stderr, when it wrote one."""
    while getattr(exc, "exceptions", None):  # an exception group (anyio's task groups)
        exc = exc.exceptions[0]  # type: ignore[attr-defined]
    text = redact_urls(" ".join(str(exc).split())) or type(exc).__name__
    last = stderr.last_line() if stderr is not None else ""
    line = f"{text} (stderr: {last})" if last else text
    return line if len(line) <= 300 else line[:297] + "..."


def import_sdk() -> None:
    import httpx2  # noqa: F401
    import mcp
    import mcp.client.stdio
    import mcp.client.streamable_http  # noqa: F401


def dropped(exc: BaseException) -> Dropped | None:
    """The Dropped inside ``exc`` (task groups wrap it), or None."""
    if isinstance(exc, Dropped):
        return exc
    for inner in getattr(exc, "exceptions", None) or ():
        found = dropped(inner)
        if found is not None:
            return found
    return None
