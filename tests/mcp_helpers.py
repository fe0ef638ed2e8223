"""Helpers for the MCP tests: the test server's command line, a free port, waiting for a
process to be gone, and the npm reference server (server-everything), installed once."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from rollchat.config.mcp_servers import McpServerConfig, check_server
from rollchat.engine.core import Engine, EngineSettings
from rollchat.providers.base import RetryPolicy
from rollchat.providers.offline import OfflineProvider
from rollchat.tools.mcp import McpServers

SERVER = Path(__file__).with_name("mcp_server.py")
NOTES_SERVER = Path(__file__).parent.parent / "examples" / "mcp" / "notes_server.py"


@pytest.fixture
def servers() -> Iterator[list[McpServers]]:
    """The MCP server sets a test starts (see ``start``), each closed when the test ends."""
    made: list[McpServers] = []
    yield made
    for server in made:
        server.close()


@contextmanager
def running(source: McpServers) -> Iterator[McpServers]:
    """``source`` started and ready for a module's tests that only call it (each start is
    seconds of CPU), stopped when the block ends, even after a failure. Ready before any test
    runs: a process spawned during a test is killed at its end (conftest's _reaped_children)."""
    try:
        source.start()
        source.collect(wait=True)
        yield source
    finally:
        source.close()


def start(made: list[McpServers], *configs: McpServerConfig, env: dict[str, str] | None = None,
          **options: Any) -> McpServers:
    """Start the servers ``configs`` (the child environment from ``env``), kept in ``made``
    (the ``servers`` fixture) so the test's end closes them."""
    source = McpServers(configs, env or {}, **options)
    made.append(source)
    source.start()
    return source


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


def wait_until(check: Callable[[], bool], seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"not true within {seconds} s")
        time.sleep(0.05)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextmanager
def http_server(*args: str, port: int | None = None) -> Iterator[str]:
    """The test server over streamable HTTP on 127.0.0.1 (``port``: a given one); yields
    its URL."""
    port = port or free_port()
    process = subprocess.Popen([sys.executable, str(SERVER), "--http", str(port), *args],
                               stderr=subprocess.DEVNULL)
    try:
        _wait_for_port(port, process)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(10)


# The reference server of the MCP project, from npm, pinned; installed once into a cache the
# test runs share (CI's first run takes seconds: one npm install, no build).
EVERYTHING = "@modelcontextprotocol/server-everything@2026.8.31"
LOCALHOST_JS = Path(__file__).with_name("localhost.cjs")


def everything_entry() -> Path:
    """The installed server-everything's ``dist/index.js``; pytest.skip with the reason when
    node or npm is missing or the install fails."""
    import shutil

    import pytest
    from filelock import FileLock

    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.skip("node and npm are not installed: server-everything needs them")
    base = Path(os.environ.get("ROLLCHAT_TEST_CACHE")
                or Path.home() / ".cache" / "rollchat-tests")
    folder = base / EVERYTHING.replace("/", "+").replace("@", "")
    entry = folder / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist"
    entry = entry / "index.js"
    base.mkdir(parents=True, exist_ok=True)
    with FileLock(str(folder) + ".lock"):  # one install for parallel workers
        if not entry.exists():
            done = subprocess.run([npm, "install", "--prefix", str(folder), "--no-audit",
                                   "--no-fund", "--loglevel=error", EVERYTHING],
                                  capture_output=True, text=True, timeout=600, check=False)
            if done.returncode != 0 or not entry.exists():
                last = (done.stderr.strip().splitlines() or ["no output"])[-1]
                pytest.skip(f"npm could not install {EVERYTHING}: {last}")
    return entry


def everything_stdio(name: str = "everything", **settings: Any) -> McpServerConfig:
    return check_server(name, {"command": "node", "args": [str(everything_entry()), "stdio"],
                               **settings}, base_dir=Path.cwd(), origin="test")


@contextmanager
def everything_http() -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """server-everything over streamable HTTP on 127.0.0.1; yields its URL and process."""
    entry, port = everything_entry(), free_port()
    env = {**os.environ, "PORT": str(port)}
    process = subprocess.Popen(["node", "--require", str(LOCALHOST_JS), str(entry),
                                "streamableHttp"], env=env, stderr=subprocess.DEVNULL,
                               stdout=subprocess.DEVNULL)
    try:
        _wait_for_port(port, process)
        yield f"http://127.0.0.1:{port}/mcp", process
    finally:
        process.terminate()
        process.wait(10)


def _wait_for_port(port: int, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60  # (30 s was too short for a Python server at load 20)
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            if time.monotonic() > deadline or process.poll() is not None:
                raise AssertionError("the HTTP test server did not start") from None
            time.sleep(0.05)
