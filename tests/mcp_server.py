"""An MCP server for the tests, written with the SDK's own ``MCPServer``: run as a real stdio
subprocess (``python tests/mcp_server.py``) or over streamable HTTP on 127.0.0.1
(``--http PORT``, optionally requiring ``--require-header NAME=VALUE``).

``--pid-file PATH`` records its process id (the tests check it is gone after rollchat ends);
``--slow-start SECONDS`` sleeps before serving (a startup timeout); ``--crash`` exits at once
with a line on stderr.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

parser = argparse.ArgumentParser()
parser.add_argument("--http", type=int)
parser.add_argument("--require-header")
parser.add_argument("--pid-file")
parser.add_argument("--slow-start", type=float, default=0.0)
parser.add_argument("--crash", action="store_true")
options = parser.parse_args()
server = MCPServer("testing")


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
    if options.crash:
        print("cannot open the database", file=sys.stderr)
        sys.exit(3)
    time.sleep(options.slow_start)
    if options.http:
        _http()
    else:
        server.run()
