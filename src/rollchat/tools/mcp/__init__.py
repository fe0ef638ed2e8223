"""MCP servers as a tool source, on the official ``mcp`` SDK (2.x): each server runs as a task
on one background event-loop thread; the engine's synchronous tool loop calls into it."""

# Started after the first prompt (the SDK is imported once, on the loop thread, before any
# server starts: each startup timeout counts from that server's own spawn), stopped on exit.
#
# The engine asks ``changed()`` before each message and collects the tools again when the
# answer is yes, so a change costs the request prefix once, and is told in one line: a server
# ready after the first message joins then; one that exits or whose connection drops is
# marked failed at once (serve.py), its tools are withdrawn, and it is restarted with backoff
# (MAX_RESTARTS times; an HTTP server, not ours to restart, until it is back) or by hand
# (``tools restart NAME``). What is offered is bounded
# (offer.py): descriptions and schemas capped, the specs' share of the window capped.

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading
import time
from collections.abc import Callable, Coroutine, Mapping, Sequence
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, TypeVar

from rollchat.config.mcp_servers import McpServerConfig
from rollchat.tools import Tool
from rollchat.tools.images import ToolReturn
from rollchat.tools.mcp.asks import McpAsker, Sampler
from rollchat.tools.mcp.offer import DEFAULT_TOOL_TOKENS, Offer, lines_for, offer, short
from rollchat.tools.mcp.relay import Asks
from rollchat.tools.mcp.serve import (
    CONNECTION_CLOSED,
    PING_SECONDS,
    Server,
    connect,
    dropped,
    failure,
    import_sdk,
    reason,
)
from rollchat.tools.mcp_convert import McpToolError, Names, chosen, progress_text, result_text
from rollchat.tools.sources import ToolEntry

T = TypeVar("T")
STOP_SECONDS = 5.0  # on exit: how long servers get to stop before they are cancelled
FIRST_WAIT = 15.0  # the most the first message waits for servers still starting
MAX_RESTARTS = 3  # automatic restarts of a server that went away, 1 s, 2 s, 4 s apart
RESTART_AFTER = 1.0  # the wait before the first restart; each next one doubles (RETRY_CAP)
RETRY_CAP = 30.0  # an HTTP server that went away: looked for again 1, 2, 4 ... 30 s apart
PROGRESS_SECONDS = 0.2  # how often a call's progress reports are looked at
SOURCE = "mcp"
__all__ = ["SOURCE", "McpServers", "McpToolError"]


class McpServers:
    """The MCP servers of one chat: ``start`` (returns at once), ``collect`` the tools when
    ``changed``, ``call`` through ``Tool.run``, ``entries`` for ``tools``, ``restart``,
    ``close``. ``tool_tokens``: the most the offered specs may add to a request;
    ``restart_after``: the wait before the first automatic restart (then 2x, 4x ...);
    ``ping_every``: how often an idle HTTP server is asked whether it is still there."""

    def __init__(self, servers: Sequence[McpServerConfig], env: Mapping[str, str], *,
                 tool_tokens: int = DEFAULT_TOOL_TOKENS,
                 on_progress: Callable[[str, str], None] | None = None,
                 asker: McpAsker | None = None, sampler: Sampler | None = None,
                 restart_after: float = RESTART_AFTER,
                 ping_every: float = PING_SECONDS) -> None:
        self._servers = [Server(s) for s in servers]
        self._restart_after, self._ping_every = restart_after, ping_every
        self._asks = Asks(asker, sampler)  # sampling and elicitation, during a call
        self._env = dict(env)
        self._tool_tokens = tool_tokens
        self._on_progress = on_progress  # (tool, what it reports), on the chat's thread
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._closed = False
        self._all_stopped: asyncio.Event | None = None
        self._imported = threading.Event()
        self._first_end: float | None = None  # when the first message stops waiting
        self._names = Names()
        self._version = 0  # bumped by every change of a server's state
        self._seen = -1  # the version the engine last collected
        self._last: Offer | None = None
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
        for server in todo:
            server.state = "starting"
        ready = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(todo, ready),
                                        name="rollchat-mcp", daemon=True)
        self._thread.start()
        ready.wait()

    def _run(self, todo: list[Server], ready: threading.Event) -> None:
        import logging

        for name in ("mcp", "httpx2"):  # the SDK's log lines never reach the terminal: a
            logging.getLogger(name).addHandler(logging.NullHandler())  # failure is one line
        loop = asyncio.new_event_loop()
        self._loop = loop
        self._all_stopped = asyncio.Event()
        ready.set()
        try:
            import_sdk()  # once, before any server's clock starts
            now = time.monotonic()
            for server in todo:
                server.deadline = now + server.config.startup_timeout
            self._imported.set()
            loop.run_until_complete(self._main(todo))
        finally:
            self._imported.set()
            loop.close()

    async def _main(self, todo: list[Server]) -> None:
        for server in todo:
            self._launch(server)
        assert self._all_stopped is not None
        await self._all_stopped.wait()
        tasks = [s.task for s in self._servers if s.task is not None]
        for server in self._servers:
            if server.stop is not None:
                server.stop.set()
        _, late = await asyncio.wait(tasks, timeout=STOP_SECONDS) if tasks else ((), ())
        for task in late:  # a server that does not stop: cancelled (its process is killed)
            task.cancel()
        if late:
            await asyncio.wait(late, timeout=STOP_SECONDS)

    def _launch(self, server: Server) -> None:
        if self._closed or (server.task is not None and not server.task.done()):
            return
        server.stop = asyncio.Event()
        server.task = asyncio.get_running_loop().create_task(self._serve(server))

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
            thread.join(2 * STOP_SECONDS + 4)
        for server in self._servers:
            if server.state in ("starting", "ready"):
                server.state, server.reason = "stopped", ""
            server.settled.set()

    def restart(self, name: str) -> str | None:
        """``tools restart NAME``: start the server again (stopping it first if it runs);
        None when no server of this source has that name."""
        server = next((s for s in self._servers if s.name == name), None)
        if server is None:
            return None
        if server.state == "held":
            return f"MCP server {name!r} is held: {server.reason}"
        loop = self._loop
        if loop is None or self._closed:
            return "The MCP servers are stopped."
        server.restarts = 0
        if server.task is not None and not server.task.done():
            server.restart_now = True
            if server.stop is not None:
                loop.call_soon_threadsafe(server.stop.set)
        else:
            loop.call_soon_threadsafe(self._launch, server)
        return (f"Restarting MCP server {name!r}: its tools are offered from the first "
                "message after it is ready.")

    # ------------------------------------------------------------------ one server
    async def _serve(self, server: Server) -> None:
        """Run ``server`` until stopped; one that went away is started again with backoff."""
        while True:
            outcome = await self._attempt(server)
            if self._closed or (outcome == "stopped" and not server.restart_now):
                return
            if server.restart_now:  # by hand: at once, with a fresh count
                server.restart_now = False
                server.stop = asyncio.Event()
                continue
            if outcome == "failed" and not server.ever_ready:
                return
            remote, delay = _remote(server), min(
                self._restart_after * 2.0 ** min(server.restarts, 16), RETRY_CAP)
            if server.restarts >= MAX_RESTARTS and not remote:
                self._hint(server, f"'tools restart {server.name}' starts it again")
                return
            if remote and outcome == "failed":  # (not back yet) said in 'tools'
                self._hint(server, f"looking for it again in {delay:g} s")
            server.restarts += 1
            assert server.stop is not None
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(server.stop.wait(), delay)
                if not server.restart_now:
                    return
                server.restart_now = False
                server.stop = asyncio.Event()

    def _hint(self, server: Server, hint: str) -> None:
        with self._lock:
            if hint not in server.reason:
                server.reason += f"; {hint}"

    async def _attempt(self, server: Server) -> str:
        """One start of ``server``: "stopped" (by rollchat), "dropped" (it went away after it
        was ready) or "failed" (it did not start)."""
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        server.check = asyncio.Event()
        server.deadline = time.monotonic() + server.config.startup_timeout
        server.settled.clear()
        self._set(server, "starting", "")
        expired: list[bool] = []

        def expire() -> None:  # failed at once; stopping its process may take a moment
            if server.state == "starting" and task is not None:
                expired.append(True)
                self._set(server, "failed",
                          f"did not start within {server.config.startup_timeout:g} s")
                task.cancel()

        def ready(client: Any, listing: list[Any], resources: bool) -> None:
            timer.cancel()
            self._ready(server, client, listing, resources)

        timer = loop.call_later(server.config.startup_timeout, expire)
        try:
            await connect(server, self._env, ready, ping_every=self._ping_every,
                          **self._asks.callbacks(server.name))
            return "stopped"
        except asyncio.CancelledError:
            if not expired:
                raise
            return "failed"
        except Exception as exc:  # any failure of one server costs one line, never the chat
            if server.state != "ready" and not dropped(exc):
                self._set(server, "failed", failure(server, exc))
                return "failed"
            drop = dropped(exc)
            why = str(drop) if drop is not None else f"the connection dropped ({reason(exc, None)})"
            last = server.stderr.last_line() if server.stderr is not None else ""
            then = (f"looking for it again until it is back (every {RETRY_CAP:g} s at most; "
                    f"'tools restart {server.name}' looks at once)" if _remote(server)
                    else f"restarting ({server.restarts + 1} of {MAX_RESTARTS})"
                    if server.restarts < MAX_RESTARTS
                    else f"'tools restart {server.name}' starts it again")
            said = why + (f" (stderr: {last})" if last else "") + f"; {then}"
            self._set(server, "failed", said)
            with self._lock:
                server.news.append(said)
            return "dropped"
        finally:
            timer.cancel()
            with self._lock:
                if server.state in ("starting", "ready"):
                    server.state = "stopped"
                    server.reason = "restarted ('tools restart')" if server.restart_now else ""
                    if server.restart_now and server.ever_ready:
                        server.news.append(server.reason)
                    self._version += 1
                server.client = None
            server.settled.set()

    def _ready(self, server: Server, client: Any, listing: list[Any], resources: bool) -> None:
        names, unmatched = chosen(server.config, [t.name for t in listing])
        by_name = {t.name: t for t in listing}
        assigned = self._names.assign(server.name, names)
        with self._lock:
            server.client, server.unmatched = client, unmatched
            server.tools = {exposed: by_name[own] for exposed, own in sorted(assigned.items())}
            server.reads_resources = resources
            server.ever_ready = True
        self._set(server, "ready", "")
        server.settled.set()

    def _set(self, server: Server, state: str, reason: str) -> None:
        with self._lock:
            server.state, server.reason = state, reason
            server.told = False
            self._version += 1
        if state == "failed":
            server.settled.set()

    # ------------------------------------------------------------------ the ToolSource side
    def waiting_for(self) -> list[str]:
        return [s.name for s in self._servers if s.state in ("starting", "not started")
                and s.config.held is None]

    def changed(self) -> bool:
        """Whether a server's state changed since the tools were last collected."""
        return self._version != self._seen

    def collect(self, wait: bool) -> tuple[dict[str, Tool], list[str]]:
        """The tools of the servers ready now (after waiting for the ones still starting, up
        to their startup deadline or FIRST_WAIT, when ``wait``), and one line per change not
        yet told (a failure, a server withdrawn or joining, tools left out)."""
        if wait:
            self._wait_first()
        with self._lock:
            self._seen = self._version
            now = offer(self._servers, self._names, self._tool_tokens, self.call,
                        self.read_resource)
            lines = lines_for(self._servers, now, self._last, first=wait)
            self._last = now
        return now.tools, lines

    def _wait_first(self) -> None:
        while not self.settle(1.0):
            pass

    def settle(self, seconds: float) -> bool:
        """Wait up to ``seconds`` for the servers still starting; True once the first message
        need wait no longer (each settled, or past its deadline or FIRST_WAIT)."""
        if self._thread is None:  # never started (all held): nothing to wait for
            return True
        step_end = time.monotonic() + seconds
        if not self._imported.wait(seconds):
            return False
        if self._first_end is None:
            self._first_end = time.monotonic() + FIRST_WAIT
        for server in self._servers:
            limit = min(server.deadline + 1.0, self._first_end)  # (its timer fires on the
            if server.state != "starting" or time.monotonic() >= limit:  # loop thread)
                continue
            server.settled.wait(max(0.0, min(limit, step_end) - time.monotonic()))
            if server.state == "starting" and time.monotonic() < limit:
                return False
        return True

    def starting(self) -> list[tuple[str, float, float]]:
        now = time.monotonic()
        return [(s.name, max(0.0, now - s.deadline + s.config.startup_timeout),
                 s.config.startup_timeout) for s in self._servers if s.state == "starting"
                and s.deadline]

    def entries(self, offered: Mapping[str, Tool]) -> list[ToolEntry]:
        last = self._last
        out: list[ToolEntry] = []
        with self._lock:
            for server in self._servers:
                source = f"{SOURCE}:{server.name}"
                if server.state != "ready" or not server.tools:
                    state = server.state if not server.reason else (
                        f"{server.state}: {server.reason}")
                    if server.state == "ready":
                        state = "ready: offers no tools"
                    out.append(ToolEntry("", source, state))
                    continue
                for name, spec in server.tools.items():
                    left = last.left.get(name) if last is not None else None
                    state = ("ready" if name in offered else f"left out: {left}" if left
                             else "ready; offered from the next message")
                    out.append(ToolEntry(name, source, state, short(spec.description or "")))
        return out

    # ------------------------------------------------------------------ calls
    def call(self, server: Server, tool: str, arguments: dict[str, Any]) -> str | ToolReturn:
        """Call ``tool`` on ``server``, waiting at most its call timeout; a Ctrl-C or the
        timeout cancels the call. McpToolError for an error result or a failed call."""
        client = self._client(server)
        reports: queue.SimpleQueue[str] = queue.SimpleQueue()

        async def progress(done: float, total: float | None, message: str | None) -> None:
            reports.put(progress_text(done, total, message))

        result = self._run_in_loop(server, client.call_tool(
            tool, arguments, progress_callback=progress if self._on_progress else None),
            f"{tool} on MCP server {server.name!r}", reports)
        return result_text(result)

    def read_resource(self, server: Server, uri: str) -> Any:
        """The server's ``resources/read`` of ``uri`` (the SDK's result)."""
        client = self._client(server)
        return self._run_in_loop(server, client.read_resource(uri),
                                 f"reading {uri} on MCP server {server.name!r}")

    def _client(self, server: Server) -> Any:
        client = server.client
        if client is None or server.state != "ready":
            raise McpToolError(f"MCP server {server.name!r} is not running "
                               f"({server.state}{': ' + server.reason if server.reason else ''})")
        return client

    def _run_in_loop(self, server: Server, coroutine: Coroutine[Any, Any, T], what: str,
                     reports: queue.SimpleQueue[str] | None = None) -> T:
        loop, timeout = self._loop, server.config.call_timeout
        if loop is None or self._closed:
            coroutine.close()
            raise McpToolError("the MCP servers are stopped")
        # a server may ask (sampling, elicitation) as soon as the call reaches it: the call
        # counts as running before it is sent, or a quick server's question is refused
        with self._asks.during_call():
            future: Future[T] = asyncio.run_coroutine_threadsafe(coroutine, loop)
            try:
                return self._wait(future, timeout, what.partition(" ")[0], reports)
            except FutureTimeout:
                future.cancel()
                raise McpToolError(f"{what} timed out after {timeout:g} s") from None
            except BaseException as exc:
                future.cancel()  # a Ctrl-C (KeyboardInterrupt) stops the call too
                if isinstance(exc, (McpToolError, KeyboardInterrupt)):
                    raise
                if isinstance(exc, Exception):
                    if server.check is not None:  # is it still there? (HTTP: ping now)
                        with contextlib.suppress(RuntimeError):
                            loop.call_soon_threadsafe(server.check.set)
                    if _closed(exc):
                        raise McpToolError(f"{what} failed: the server went away during the call "
                                           "(it may have done part of it); 'tools' shows "
                                           "its state") from None
                    raise McpToolError(f"{what} failed: {reason(exc, None)}") from None
                raise

    def _wait(self, future: Future[T], timeout: float, tool: str,
              reports: queue.SimpleQueue[str] | None) -> T:
        """The call's result; its progress reports are shown meanwhile, from this thread
        (at most one a second: the last one then)."""
        sink = self._on_progress
        if (sink is None or reports is None) and not self._asks.live:
            return future.result(timeout)
        end, shown, pending = time.monotonic() + timeout, 0.0, ""
        while True:
            with contextlib.suppress(FutureTimeout):
                return future.result(max(0.0, min(PROGRESS_SECONDS, end - time.monotonic())))
            end += self._asks.answer()  # the time the user took does not count
            if time.monotonic() >= end:
                raise FutureTimeout
            if sink is None or reports is None:
                continue
            pending, shown = _report(sink, tool, reports, pending, shown)



def _report(sink: Callable[[str, str], None], tool: str, reports: queue.SimpleQueue[str],
            pending: str, shown: float) -> tuple[str, float]:
    """The newest progress report shown, at most one a second; (pending, when shown)."""
    while not reports.empty():
        pending = reports.get()
    if pending and time.monotonic() - shown >= 1.0:
        shown = time.monotonic()
        sink(tool, pending)
        pending = ""
    return pending, shown


def _closed(exc: BaseException) -> bool:
    """Whether a call failed because the connection ended (the server went away)."""
    return getattr(getattr(exc, "error", None), "code", None) == CONNECTION_CLOSED


def _remote(server: Server) -> bool:
    """An HTTP server: not rollchat's to run, so it is looked for until it is back."""
    return server.config.url is not None
