"""Helpers for the MCP tests: the test server's command line, a free port, waiting for a
process to be gone."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from rollchat.config.mcp_servers import McpServerConfig, check_server
from rollchat.engine.core import Engine, EngineSettings
from rollchat.providers.base import RetryPolicy
from rollchat.providers.offline import OfflineProvider
from rollchat.tools.mcp import McpServers

SERVER = Path(__file__).with_name("mcp_server.py")
NOTES_SERVER = Path(__file__).parent.parent / "examples" / "mcp" / "notes_server.py"


def stdio(name: str = "testing", *args: str, **settings: Any) -> McpServerConfig:
    return check_server(name, {"command": sys.executable, "args": [str(SERVER), *args],
                               **settings}, base_dir=Path.cwd(), origin="test")


def engine_with(servers: McpServers) -> Engine:
    return Engine(EngineSettings(OfflineProvider(), model="offline", system="sys",
                                 max_output_tokens=500, temperature=None,
                                 retry=RetryPolicy(max_retries=0), tool_sources=(servers,)))


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie (exited, not yet reaped by its parent) is gone too
        with open(f"/proc/{pid}/stat", encoding="utf-8") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return True


def gone_within(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not alive(pid):
            return True
        time.sleep(0.05)
    return not alive(pid)


def wait_for_file(path: Path, seconds: float = 30) -> str:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if path.exists() and path.read_text(encoding="utf-8").strip():
            return path.read_text(encoding="utf-8").strip()
        time.sleep(0.05)
    raise AssertionError(f"{path} was not written within {seconds} s")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextmanager
def http_server(*args: str) -> Iterator[str]:
    """The test server over streamable HTTP on 127.0.0.1; yields its URL."""
    port = free_port()
    process = subprocess.Popen([sys.executable, str(SERVER), "--http", str(port), *args],
                               stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline or process.poll() is not None:
                    raise AssertionError("the HTTP test server did not start") from None
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(10)
