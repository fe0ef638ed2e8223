"""An MCP server for the tests, written with the SDK's own ``MCPServer``: run as a real stdio
subprocess (``python tests/mcp_server.py``) or over streamable HTTP on 127.0.0.1
(``--http PORT``, optionally requiring ``--require-header NAME=VALUE``).

``--pid-file PATH`` records its process id (the tests check it is gone after rollchat ends);
``--sleeping-file PATH``: the ``sleep`` tool writes it as it starts sleeping (a Ctrl-C then
lands inside the call);
``--slow-start SECONDS`` sleeps before serving (a startup timeout); ``--start-when FILE`` serves
once FILE exists (a server still starting until the test says, with no fixed wait; it gives up
after START_WHEN_SECONDS); ``--crash`` exits at once
with a line on stderr (``--crash-if FILE``: while FILE exists); ``--stderr-mb N`` writes N MiB
to stderr first; ``--odd`` adds the tools real servers have that rollchat must bound or refuse
(see ``_odd``).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

if "--pid-file" in sys.argv:  # first, before the SDK loads (seconds on a loaded machine)
    Path(sys.argv[sys.argv.index("--pid-file") + 1]).write_text(str(os.getpid()),
                                                                encoding="utf-8")
if "--crash" in sys.argv or ("--crash-if" in sys.argv and Path(  # before the SDK loads too:
        sys.argv[sys.argv.index("--crash-if") + 1]).exists()):  # failed restarts cost no import
    print("cannot open the database", file=sys.stderr)
    sys.exit(3)

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError

parser = argparse.ArgumentParser()
parser.add_argument("--http", type=int)
parser.add_argument("--require-header")
parser.add_argument("--pid-file")
parser.add_argument("--sleeping-file")
parser.add_argument("--slow-start", type=float, default=0.0)
parser.add_argument("--start-when")
parser.add_argument("--crash", action="store_true")
parser.add_argument("--crash-if")  # a file: crash at start while it exists (restarts fail)
parser.add_argument("--stderr-mb", type=int, default=0)
parser.add_argument("--odd", action="store_true")
parser.add_argument("--description-chars", type=int, default=0)
options = parser.parse_args()


class Testing(MCPServer):
    """The SDK's server, with a tool that needs task augmentation and one whose input schema
    is huge (MCPServer has no argument for either)."""

    async def list_tools(self) -> list[Any]:
        from mcp.types import ToolExecution

        tools = await super().list_tools()
        for tool in tools:
            if tool.name == "task_only":
                tool.execution = ToolExecution(task_support="required")
            elif tool.name == "huge_schema":
                tool.input_schema = {"type": "object", "properties": {
                    f"field_{i}": {"type": "string", "description": "x" * 100}
                    for i in range(300)}}
        return tools


server = Testing("testing")

START_WHEN_SECONDS = 120.0  # ``--start-when``: the most it waits for its file, then exits


def _wait_for(path: Path) -> None:
    """Return once ``path`` exists; exit with a line on stderr after START_WHEN_SECONDS."""
    deadline = time.monotonic() + START_WHEN_SECONDS
    while not path.exists():
        if time.monotonic() > deadline:
            print(f"{path} did not appear within {START_WHEN_SECONDS:g} s", file=sys.stderr)
            sys.exit(4)
        time.sleep(0.02)


@server.tool()
def add(a: int, b: int) -> str:
    """Add two integers."""
    return str(a + b)


@server.tool()
def fail(message: str) -> str:
    """Always fails with this message (an is_error result)."""
    raise ToolError(message)


@server.tool()
def sleep(seconds: float) -> str:
    """Sleep, then answer."""
    if options.sleeping_file:
        Path(options.sleeping_file).write_text(str(seconds), encoding="utf-8")
    time.sleep(seconds)
    return "slept"


@server.tool()
def env(name: str) -> str:
    """The value of an environment variable in the server's process, or <unset>."""
    return os.environ.get(name, "<unset>")


@server.tool()
def cwd() -> str:
    """The server's working directory."""
    return os.getcwd()


def _odd() -> None:
    """Tools named ``a b`` and ``a_b`` (one name once made valid), one that runs only as a
    task, one with a huge schema, a resource link and the resource, progress, a grandchild."""
    server.add_tool(lambda: "the tool with a space", name="a b", description="Space.")
    server.add_tool(lambda: "the tool with an underscore", name="a_b", description="Score.")
    server.add_tool(lambda: "never", name="task_only", description="Runs as a task only.")
    server.add_tool(lambda: "wide", name="huge_schema", description="Takes a lot.")

    @server.resource("note://hello", mime_type="text/plain")
    def hello() -> str:
        return "the note says hello"

    @server.tool()
    def link() -> list[Any]:
        """A resource link to read."""
        from mcp.types import ResourceLink

        return [ResourceLink(type="resource_link", uri="note://hello", name="hello")]

    @server.tool()
    async def steps(ctx: Context) -> str:  # type: ignore[type-arg]
        """Three steps, each reported as progress."""
        for step in range(1, 4):
            await ctx.report_progress(step, 3, f"step {step}")
            await asyncio.sleep(0.3)
        return "done"

    @server.tool()
    def spawn(pid_file: str, own_session: bool = False) -> str:
        """Start a child process that outlives this server unless its group is ended (with
        ``own_session``: in a session of its own, as setsid starts it)."""
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"],
                                 start_new_session=own_session)
        Path(pid_file).write_text(str(child.pid), encoding="utf-8")
        return str(child.pid)


def _http() -> None:
    import uvicorn

    app = server.streamable_http_app()
    if options.require_header:
        name, _, value = options.require_header.partition("=")
        inner = app

        async def app(scope, receive, send):  # type: ignore[no-untyped-def]
            headers = dict(scope.get("headers") or [])
            if scope["type"] == "http" and headers.get(name.lower().encode()) != value.encode():
                await send({"type": "http.response.start", "status": 401, "headers": []})
                await send({"type": "http.response.body", "body": b"unauthorized"})
                return
            await inner(scope, receive, send)

    uvicorn.run(app, host="127.0.0.1", port=options.http, log_level="warning")


if __name__ == "__main__":
    if options.pid_file:
        Path(options.pid_file).write_text(str(os.getpid()), encoding="utf-8")
    if options.stderr_mb:
        block = "x" * 1023 + "\n"
        for _ in range(options.stderr_mb * 1024):
            sys.stderr.write(block)
        sys.stderr.write("the last line\n")
        sys.stderr.flush()
    if options.odd:
        _odd()
    if options.description_chars:
        server.add_tool(lambda: "long", name="long_doc",
                        description="y" * options.description_chars)
    time.sleep(options.slow_start)
    if options.start_when:
        _wait_for(Path(options.start_when))
    if options.http:
        _http()
    else:
        server.run()
