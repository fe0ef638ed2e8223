"""Helpers for the MCP tests: the test server's command line (forked from a zygote that has the
SDK imported: see ``zygote_command``), a free port, waiting for a process to be gone, and the
npm reference server (server-everything), installed once."""

from __future__ import annotations

import json
import os
import selectors
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import warnings
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
ZYGOTE = Path(__file__).with_name("mcp_zygote.py")
LAUNCH = Path(__file__).with_name("mcp_launch.py")
ZYGOTE_DEADLINE = 60.0  # its SDK import: seconds (a loaded machine: more)


class _Zygote:
    """This process's server zygote (tests/mcp_zygote.py): its process, its control socket
    (closed: it ends) and the socket the launchers connect to."""

    def __init__(self, bare: bool = False) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="rollchat-mcp-zygote-"))
        self.socket = self.folder / "socket"
        self.control, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.log = open(self.folder / "log", "wb")  # noqa: SIM115 (the zygote's life)
        with theirs:
            self.process = subprocess.Popen(
                [sys.executable, str(ZYGOTE), str(theirs.fileno()), str(self.socket),
                 *(["bare"] if bare else [])],
                pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL, stderr=self.log, start_new_session=True)
        try:
            with selectors.DefaultSelector() as selector:
                selector.register(self.control, selectors.EVENT_READ)
                if not selector.select(ZYGOTE_DEADLINE):
                    raise OSError(f"no answer within {ZYGOTE_DEADLINE:.0f} s")
            ready = json.loads(self.control.recv(1 << 16) or b"{}")
            if ready.get("threads") != 1:
                raise OSError(f"it did not start ({ready}): "
                              f"{(self.folder / 'log').read_text(errors='replace')[-300:]}")
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        self.control.close()  # it ends at this, killing the servers still running
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)
        self.log.close()
        shutil.rmtree(self.folder, ignore_errors=True)


_zygote: _Zygote | None = None
_zygote_off: str | None = None
_zygote_bare = False  # the zygote started imports no SDK (own_zygote)
_zygote_lock = threading.Lock()


def zygote_command(script: Path | str, *args: str) -> list[str]:
    """``python SCRIPT ARGS`` (SCRIPT ``-m``: ``python -m MODULE ARGS``) as rollchat runs an
    MCP server (a command line), forked by this process's zygote, which has the SDK imported
    (each server's own import is seconds of CPU): ``python -I -S tests/mcp_launch.py SOCKET
    SCRIPT ARGS``, a process that stands for the server (see that file). The plain command
    when ROLLCHAT_TESTS_NO_FORKSERVER=1 or the zygote does not start (with a warning). What a
    test proves about the server's own process (its children, its process group, what /proc
    says of it) needs the plain command."""
    global _zygote, _zygote_off
    with _zygote_lock:
        if os.environ.get("ROLLCHAT_TESTS_NO_FORKSERVER") != "1" and _zygote is None \
                and _zygote_off is None:
            try:
                _zygote = _Zygote(_zygote_bare)
            except OSError as error:
                _zygote_off = str(error)
                warnings.warn(f"the MCP test servers run as real processes: the zygote did "
                              f"not start: {error}", RuntimeWarning, stacklevel=2)
        if _zygote is None or os.environ.get("ROLLCHAT_TESTS_NO_FORKSERVER") == "1":
            return [sys.executable, str(script), *args]
        return [sys.executable, "-I", "-S", str(LAUNCH), str(_zygote.socket), str(script),
                *args]


def zygote_cpu() -> float:
    """CPU seconds of the zygote and of the servers it forked that have ended (not in this
    process's RUSAGE_CHILDREN until the zygote ends: bench/bench_tests.py adds them)."""
    with _zygote_lock:
        if _zygote is None:
            return 0.0
        _zygote.control.send(b"cpu")
        with selectors.DefaultSelector() as selector:
            selector.register(_zygote.control, selectors.EVENT_READ)
            if not selector.select(ZYGOTE_DEADLINE):
                raise OSError("the MCP test server zygote did not answer")
        return float(json.loads(_zygote.control.recv(1 << 16))["cpu"])


def is_zygote(process: object) -> bool:
    """Whether ``process`` is the zygote's (conftest's reaper leaves it to the session's end)."""
    return _zygote is not None and process is _zygote.process


def stop_zygote() -> None:
    """End the zygote and the servers it still runs (at the session's end)."""
    global _zygote
    with _zygote_lock:
        if _zygote is not None:
            _zygote.stop()
            _zygote = None


@contextmanager
def own_zygote() -> Iterator[None]:
    """For a test that ends a zygote: in the block, ``zygote_command``'s zygote is the test's
    own, started when first asked for, importing no SDK (the probes such a test runs need none:
    tests/mcp_zygote.py ``bare``); the worker's, left alone, serves on after it. (Ended, the
    worker's zygote was started again by its next MCP test: the SDK imported again, more than a
    second of CPU.)"""
    global _zygote, _zygote_off, _zygote_bare
    with _zygote_lock:
        saved = _zygote, _zygote_off, _zygote_bare
        _zygote, _zygote_off, _zygote_bare = None, None, True
    try:
        yield
    finally:
        stop_zygote()
        with _zygote_lock:
            _zygote, _zygote_off, _zygote_bare = saved


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


def stdio(name: str = "testing", *args: str, real: bool = False,
          **settings: Any) -> McpServerConfig:
    """The test server over stdio, forked by the zygote (see ``zygote_command``) unless
    ``real``: a new interpreter, where the test is about the server's own process."""
    command = [sys.executable, str(SERVER), *args] if real else zygote_command(SERVER, *args)
    return check_server(name, {"command": command[0], "args": command[1:], **settings},
                        base_dir=Path.cwd(), origin="test")


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
    """The test server over streamable HTTP on 127.0.0.1 (``port``: a given one), forked by
    the zygote (see ``zygote_command``); yields its URL."""
    port = port or free_port()
    process = subprocess.Popen(zygote_command(SERVER, "--http", str(port), *args),
                               stdin=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
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


def shared_cache() -> Path:
    """Where what the test runs share is kept (the npm install): $ROLLCHAT_TEST_CACHE, else
    the user's own ~/.cache/rollchat-tests, from the password database: each test's HOME is a
    fresh directory of its own (conftest), where an install was made again at every test."""
    import pwd

    return Path(os.environ.get("ROLLCHAT_TEST_CACHE")
                or Path(pwd.getpwuid(os.getuid()).pw_dir) / ".cache" / "rollchat-tests")


def everything_entry() -> Path:
    """The installed server-everything's ``dist/index.js``; pytest.skip with the reason when
    node or npm is missing or the install fails."""
    import shutil

    import pytest
    from filelock import FileLock

    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.skip("node and npm are not installed: server-everything needs them")
    base = shared_cache()
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
