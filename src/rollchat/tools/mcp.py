"""MCP servers as a tool source, on the official ``mcp`` SDK (2.x): each server runs as a task
on one background event-loop thread; the engine's synchronous tool loop calls into it."""

# MCP servers as a tool source, on the official ``mcp`` SDK (2.x): each server runs as a task
# on one background event-loop thread; the engine's synchronous tool loop calls into it with a
# timeout. Started after the first prompt, stopped on exit (no orphan processes).
#
# The tools of the servers ready when the first message is sent (the first message waits for
# those still starting, up to their startup timeout) are fixed for the session; a server that
# becomes ready later joins at the next compaction or resume, so the request prefix never
# changes between compactions.

from __future__ import annotations

import asyncio
import contextlib
import tempfile
import threading
import time
from collections.abc import Coroutine, Mapping, Sequence
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any, TypeVar

from rollchat.config.mcp_servers import McpServerConfig
from rollchat.errors import ConfigError
from rollchat.providers.base import ToolSpec
from rollchat.text.wording import redact_url, redact_urls
from rollchat.tools import Tool
from rollchat.tools.mcp_convert import McpToolError, chosen, exposed_name, result_text
from rollchat.tools.sources import ToolEntry

if TYPE_CHECKING:
    from mcp import Client

T = TypeVar("T")
STOP_SECONDS = 5.0  # on exit: how long servers get to stop before they are cancelled
SOURCE = "mcp"


@dataclass
class _Server:
    config: McpServerConfig
    state: str = "not started"  # starting | ready | failed | held | stopped
    reason: str = ""
    client: Client | None = None
    tools: dict[str, Any] = field(default_factory=dict)  # exposed name -> the SDK's Tool
    unmatched: list[str] = field(default_factory=list)
    settled: threading.Event = field(default_factory=threading.Event)  # ready, failed, held
    deadline: float = 0.0
    stop: asyncio.Event | None = None
    errlog: IO[str] | None = None
    told: bool = False


class McpServers:
    """The MCP servers of one chat: ``start`` (returns at once), ``collect`` the tools,
    ``call`` through ``Tool.run``, ``entries`` for the ``tools`` listing, ``close``."""

    def __init__(self, servers: Sequence[McpServerConfig], env: Mapping[str, str]) -> None:
        self._servers = [_Server(s) for s in servers]
        self._env = dict(env)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._closed = False
        self._all_stopped: asyncio.Event | None = None
        for server in self._servers:
            if server.config.held is not None:
                server.state, server.reason = "held", server.config.held
                server.settled.set()

    # ------------------------------------------------------------------ life cycle
    def start(self) -> None:
        """Start every server that is not held, in the background."""
        todo = [s for s in self._servers if s.state == "not started"]
        if not todo or self._thread is not None:
            return
        now = time.monotonic()
        for server in todo:
            server.state = "starting"
            server.deadline = now + server.config.startup_timeout
        ready = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(todo, ready),
                                        name="rollchat-mcp", daemon=True)
        self._thread.start()
        ready.wait()

    def _run(self, todo: list[_Server], ready: threading.Event) -> None:
        import logging

        for name in ("mcp", "httpx2"):  # the SDK's log lines never reach the terminal: a
            logging.getLogger(name).addHandler(logging.NullHandler())  # failure is one line
        loop = asyncio.new_event_loop()
        self._loop = loop
        self._all_stopped = asyncio.Event()
        ready.set()
        try:
            loop.run_until_complete(self._main(todo))
        finally:
            loop.close()

    async def _main(self, todo: list[_Server]) -> None:
        tasks = [asyncio.ensure_future(self._serve(s)) for s in todo]
        assert self._all_stopped is not None
        await self._all_stopped.wait()
        for server in todo:
            if server.stop is not None:
                server.stop.set()
        _, late = await asyncio.wait(tasks, timeout=STOP_SECONDS)
        for task in late:  # a server that does not stop: cancelled (its process is killed)
            task.cancel()
        if late:
            await asyncio.wait(late, timeout=STOP_SECONDS)

    def close(self) -> None:
        """Stop every server and wait for their processes to end (a few seconds at most)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        loop, thread = self._loop, self._thread
        if loop is not None and thread is not None and self._all_stopped is not None:
            with contextlib.suppress(RuntimeError):  # (the loop is already closed)
                loop.call_soon_threadsafe(self._all_stopped.set)
            thread.join(2 * STOP_SECONDS + 2)
        for server in self._servers:
            if server.state in ("starting", "ready"):
                server.state, server.reason = "stopped", ""
            server.settled.set()
            if server.errlog is not None:
                server.errlog.close()

    # ------------------------------------------------------------------ one server
    async def _serve(self, server: _Server) -> None:
        server.stop = asyncio.Event()
        task = asyncio.current_task()
        loop = asyncio.get_running_loop()
        expired = []

        def expire() -> None:  # failed at once; stopping its process may take a moment
            if server.state == "starting" and task is not None:
                expired.append(True)
                self._settle(server, "failed", f"did not start within "
                             f"{server.config.startup_timeout:g} s")
                task.cancel()

        timer = loop.call_at(loop.time() + server.config.startup_timeout, expire)
        try:
            await self._connect(server, timer)
        except asyncio.CancelledError:
            if not expired:
                raise
        except ConfigError as exc:
            self._settle(server, "failed", str(exc).partition(": ")[2] or str(exc))
        except Exception as exc:  # any failure of one server costs one line, never the chat
            where = (f"{redact_url(server.config.url)}: " if server.config.transport == "http"
                     and server.config.url and "${" not in server.config.url else "")
            self._settle(server, "failed", where + _reason(exc, server.errlog))
        finally:
            timer.cancel()
            with self._lock:
                if server.state in ("starting", "ready"):
                    server.state, server.reason = "stopped", ""
                server.client = None
            server.settled.set()

    async def _connect(self, server: _Server, timer: asyncio.TimerHandle) -> None:
        from mcp import Client
        from mcp.types import Implementation

        from rollchat import __version__
        config = server.config.expanded(self._env)
        async with self._transport(config, server) as transport:
            client = Client(transport, cache=None,
                            client_info=Implementation(name="rollchat", version=__version__))
            async with client:
                listing = await _list_tools(client)
                timer.cancel()
                names, unmatched = chosen(config, [t.name for t in listing])
                by_name = {t.name: t for t in listing}
                tools: dict[str, Any] = {}
                for name in sorted(names):
                    tools[exposed_name(config.name, name, tools)] = by_name[name]
                with self._lock:
                    server.client, server.tools, server.unmatched = client, tools, unmatched
                    server.state = "ready"
                server.settled.set()
                assert server.stop is not None
                await server.stop.wait()

    def _transport(self, config: McpServerConfig, server: _Server) -> Any:
        """An async context manager yielding the transport ``Client`` connects through."""
        from contextlib import asynccontextmanager

        @asynccontextmanager
        async def opened() -> Any:
            if config.transport == "stdio":
                from mcp import StdioServerParameters
                from mcp.client.stdio import stdio_client

                assert config.command is not None
                server.errlog = tempfile.TemporaryFile("w+", encoding="utf-8",  # noqa: SIM115
                                                       errors="replace")
                params = StdioServerParameters(command=config.command, args=list(config.args),
                                               env=dict(config.env), cwd=config.cwd)
                yield stdio_client(params, errlog=server.errlog)
            elif config.transport == "http":
                import httpx2
                from mcp.client.streamable_http import streamable_http_client

                assert config.url is not None
                async with httpx2.AsyncClient(headers=dict(config.headers),
                                              timeout=httpx2.Timeout(30.0, read=300.0)) as http:
                    yield streamable_http_client(config.url, http_client=http)
            else:
                raise ConfigError(f"MCP server {config.name!r}: the {config.transport} "
                                  "transport is not supported (use stdio or streamable HTTP)")

        return opened()

    def _settle(self, server: _Server, state: str, reason: str) -> None:
        with self._lock:
            server.state, server.reason = state, reason
        server.settled.set()

    # ------------------------------------------------------------------ the ToolSource side
    def waiting_for(self) -> list[str]:
        return [s.config.name for s in self._servers if s.state == "starting"]

    def collect(self, wait: bool) -> tuple[dict[str, Tool], list[str]]:
        """The tools of the servers ready now (after waiting for the ones still starting, up
        to their startup deadline, when ``wait``), and one line per failure not yet told."""
        if wait:
            for server in self._servers:
                server.settled.wait(max(0.0, server.deadline - time.monotonic()) + 1.0
                                    if server.state == "starting" else 0)
        tools: dict[str, Tool] = {}
        lines: list[str] = []
        with self._lock:
            for server in self._servers:
                if server.state == "ready":
                    for name, spec in server.tools.items():
                        tools[name] = self._tool(server, name, spec)
                    if server.unmatched and not server.told:
                        lines.append(f"MCP server {server.config.name!r}: include_tools "
                                     f"{', '.join(server.unmatched)} matched no tool")
                    server.told = True
                elif server.state == "failed" and not server.told:
                    lines.append(f"MCP server {server.config.name!r} did not start: "
                                 f"{server.reason}; the chat goes on without its tools")
                    server.told = True
        return tools, lines

    def entries(self, offered: Mapping[str, Tool]) -> list[ToolEntry]:
        out: list[ToolEntry] = []
        with self._lock:
            for server in self._servers:
                source = f"{SOURCE}:{server.config.name}"
                if server.state != "ready" or not server.tools:
                    state = server.state if not server.reason else (
                        f"{server.state}: {server.reason}")
                    if server.state == "ready":
                        state = "ready: offers no tools"
                    out.append(ToolEntry("", source, state))
                    continue
                for name, spec in server.tools.items():
                    state = "ready" if name in offered else (
                        "ready; offered from the next message" if not offered
                        else "ready; offered after the next compact or resume")
                    out.append(ToolEntry(name, source, state, _short(spec.description or "")))
        return out

    # ------------------------------------------------------------------ calls
    def _tool(self, server: _Server, name: str, spec: Any) -> Tool:
        schema = dict(spec.input_schema or {"type": "object", "properties": {}})
        description = spec.description or spec.title or f"{spec.name} ({server.config.name})"

        def run(arguments: Mapping[str, object]) -> str:
            return self.call(server, spec.name, dict(arguments))

        return Tool(ToolSpec(name, description, schema), run)

    def call(self, server: _Server, tool: str, arguments: dict[str, Any]) -> str:
        """Call ``tool`` on ``server``, waiting at most its call timeout; a Ctrl-C or the
        timeout cancels the call. McpToolError for an error result or a failed call."""
        client = server.client
        if client is None or server.state != "ready":
            raise McpToolError(f"MCP server {server.config.name!r} is not running "
                               f"({server.state}{': ' + server.reason if server.reason else ''})")
        timeout = server.config.call_timeout
        result = self._run_in_loop(client.call_tool(tool, arguments), timeout,
                                   f"{tool} on MCP server {server.config.name!r}")
        return result_text(result)

    def _run_in_loop(self, coroutine: Coroutine[Any, Any, T], timeout: float, what: str) -> T:
        loop = self._loop
        if loop is None or self._closed:
            coroutine.close()
            raise McpToolError("the MCP servers are stopped")
        future: Future[T] = asyncio.run_coroutine_threadsafe(coroutine, loop)
        try:
            return future.result(timeout)
        except FutureTimeout:
            future.cancel()
            raise McpToolError(f"{what} timed out after {timeout:g} s") from None
        except BaseException as exc:
            future.cancel()  # a Ctrl-C (KeyboardInterrupt) stops the call too
            if isinstance(exc, (McpToolError, KeyboardInterrupt)):
                raise
            if isinstance(exc, Exception):
                raise McpToolError(f"{what} failed: {_reason(exc, None)}") from None
            raise


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


def _reason(exc: BaseException, errlog: IO[str] | None) -> str:
    """One line about a failure: the innermost error (task groups wrap them), and the last
    line the server wrote to stderr, when it wrote one."""
    while getattr(exc, "exceptions", None):  # an exception group (anyio's task groups)
        exc = exc.exceptions[0]  # type: ignore[attr-defined]
    text = redact_urls(" ".join(str(exc).split())) or type(exc).__name__
    last = ""
    if errlog is not None:
        try:
            errlog.flush()
            errlog.seek(0)
            lines = [line.strip() for line in errlog.read()[-4000:].splitlines()]
            last = next((line for line in reversed(lines) if line), "")
        except (OSError, ValueError):
            last = ""
    reason = f"{text} (stderr: {last})" if last else text
    return reason if len(reason) <= 300 else reason[:297] + "..."


def _short(text: str) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= 100 else line[:97] + "..."
