"""Shared fixtures, for every test: no connection outside 127.0.0.1 (it fails loudly); HOME
and the XDG directories in a fresh temporary directory (the real user config is never read);
Python children with a bytecode cache; no child process left running after its test."""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pexpect
import pytest

from tests import forkserver
from tests.e2e import PYCACHE, user_dirs
from tests.examples_budget import DEEP

if DEEP:  # HYPOTHESIS_PROFILE=deep: the property tests without a count of their own try more
    from hypothesis import settings

    settings.register_profile("deep", max_examples=500)
    settings.load_profile("deep")

# This process (each xdist worker) keeps what it compiles in the same shared cache, whatever
# PYTHONDONTWRITEBYTECODE says: the test modules as pytest rewrites their asserts (the most of
# collection's time) and rollchat's own modules are then read, not compiled again, by the
# other workers and by every later run (a changed file is compiled again: the cache checks
# each source's mtime and size).
sys.dont_write_bytecode = False
sys.pycache_prefix = str(PYCACHE)
# So do the xdist workers from their start (they inherit this environment, set here in the
# controller before it starts them): what each imports before this file (pytest, its plugins,
# the plugins' modules as pytest rewrites them) is read from the cache, not compiled again by
# each worker at each run when PYTHONDONTWRITEBYTECODE is set (a second of CPU per worker).
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
os.environ["PYTHONPYCACHEPREFIX"] = str(PYCACHE)


def _end_now() -> None:
    """How an xdist worker ends (see pytest_configure): without the interpreter's finalization,
    which freed a whole run's objects (2,700 tests' worth of modules, fixtures and caches) for
    5-8 s of CPU per worker after its last test, the controller waiting for all four."""
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        with contextlib.suppress(Exception):
            if stream is not None:
                stream.flush()
    os._exit(0)


# A shell that starts pytest in the background (``pytest &``) makes it ignore SIGINT, and
# Python then installs no KeyboardInterrupt handler: the tests that press Ctrl-C on this very
# process (os.kill(os.getpid(), SIGINT)) would test nothing. Give it the disposition it has
# when started from a terminal; the children the pty tests start reset theirs (e2e.py).
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

# Under pytest-xdist (the README's ``-n 4 --dist loadgroup``) these modules run on one worker,
# one test at a time: they send signals and wait for deadlines, lock waits and timers, or start
# eight processes at once (test_concurrency), so none of them runs beside another of them.
# Each test in them still gives a loaded machine slack on its own.
ONE_AT_A_TIME = ("tests/session/test_signals.py", "tests/session/test_interrupts.py",
                 "tests/storage/test_locks.py", "tests/storage/test_concurrency.py",
                 "tests/storage/test_crash.py", "tests/memory/test_memory_deadline.py")
# Modules whose tests are each far longer than the rest (a minute of CPU or more on two cores):
# run first, so that no worker starts one while the others have finished. xdist hands out the
# tests in collection order (after the one-at-a-time group, the largest unit), and these would
# come late in it.
LONGEST_FIRST = ("tests/storage/test_large_sessions.py",)
_ROOT = Path(__file__).resolve().parent.parent


def pytest_configure(config: pytest.Config) -> None:
    """The xdist controller, with a cold bytecode cache (a fresh clone or a new venv), fills it
    before it starts the workers (see ``warm_cache``). A worker ends by ``_end_now``: registered
    before any test runs, it runs after every exit function registered later (a library's, a
    TemporaryDirectory's finalizer) and after the worker has sent its last report; what it
    skips was registered before (logging's shutdown)."""
    if hasattr(config, "workerinput"):
        atexit.register(_end_now)
    elif config.getoption("numprocesses", None) and cache_is_cold():
        warm_cache([str(arg) for arg in config.args])


def cache_is_cold() -> bool:
    """Whether the compiled form of a module of the tests' collection (as pytest rewrites it),
    of rollchat's or of an SDK's (a new venv) is missing or older than its source."""
    import importlib.util

    sdk = importlib.util.find_spec("anthropic")
    sources = [_ROOT / "tests" / "test_grouping.py", _ROOT / "src" / "rollchat" / "__init__.py",
               *([Path(sdk.origin)] if sdk is not None and sdk.origin else [])]
    for source in sources:
        compiled = Path(importlib.util.cache_from_source(str(source)))
        if source.name == "test_grouping.py":  # (pytest's rewritten form: a name of its own)
            compiled = compiled.with_name(
                f"{source.stem}.{sys.implementation.cache_tag}-pytest-{pytest.__version__}.pyc")
        try:
            if compiled.stat().st_mtime < source.stat().st_mtime:
                return True
        except OSError:
            return True
    return False


def warm_cache(args: list[str]) -> None:
    """Compile, once, what every worker would otherwise compile at the same moment: each
    collects every test module (and imports what they import), each starts a fork server that
    imports rollchat and the SDKs (tests/zygote.py), and with an empty cache the four compiled
    all of it four times over on two cores. Two processes, side by side: a collection of the
    same paths (pytest's rewritten test modules and their imports) and the fork server's
    imports. A failure here costs nothing but the time: the workers compile what is missing."""
    preload = ("import sys; sys.path.insert(0, sys.argv[1]); import zygote; zygote.preload()")
    commands = [[sys.executable, "-m", "pytest", "--collect-only", "-qq", "-p", "no:xdist",
                 *args],
                [sys.executable, "-c", preload, str(_ROOT / "tests")]]
    # (their bytecode cache: this process's environment, as this file's import set it)
    started = [subprocess.Popen(command, cwd=_ROOT, stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
               for command in commands]
    for process in started:
        try:
            process.wait(timeout=300)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.hookimpl(tryfirst=True)  # the group marked before pytest-xdist reads the marks
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    paths = {_ROOT / name for name in ONE_AT_A_TIME}
    first = {_ROOT / name for name in LONGEST_FIRST}
    missing = sorted(str(path) for path in paths | first if not path.is_file())
    if missing:  # a module moved: keep the lists true
        raise pytest.UsageError(f"tests/conftest.py: no such file {missing}")
    for item in items:
        if item.path in paths:
            item.add_marker(pytest.mark.xdist_group("one-at-a-time"))
    items.sort(key=lambda item: item.path not in first)  # stable: the rest keep their order


def pytest_collection_finish(session: pytest.Session) -> None:
    """Under ``--dist loadgroup`` (the README's), each xdist worker refuses to run when the
    groups were lost: pytest-xdist marks a test's group by a suffix of its id, which pytest 9.2
    no longer takes (pytest-xdist issue #1386), and the tests of a group then run on every
    worker at once, silently (the one-at-a-time signal tests beside each other, a framework
    imported in each worker)."""
    if getattr(session.config.option, "loadgroup", False):
        lost = ungrouped(session.items)
        if lost:  # (said on the worker's stderr too: xdist shows a worker's error as a crash)
            message = (f"--dist loadgroup lost the xdist_group of {len(lost)} tests (first:"
                       f" {lost[0]}): pytest {pytest.__version__} with this pytest-xdist does"
                       " not group (pytest-xdist issue #1386); install the versions"
                       " constraints.txt pins")
            print(f"tests/conftest.py: {message}", file=sys.__stderr__, flush=True)
            raise pytest.UsageError(message)
    heavy = collected_sdks()
    if heavy:
        raise pytest.UsageError(
            f"collecting the tests imported {', '.join(heavy)}: a test module imports it at its"
            " top (find which with python -X importtime -m pytest -s --collect-only); import it"
            " in the tests that use it: each xdist worker collects every module, and the"
            " anthropic SDK alone is 1.4 s of each worker's collection, 9 s with a cold"
            " bytecode cache (a fresh clone)")


# The SDKs and agent frameworks no test module imports at its top (see pytest_collection_finish)
COLLECTION_FREE = ("anthropic", "openai", "litellm", "google.adk", "langchain", "langgraph",
                   "agents", "pydantic_ai", "strands")


def collected_sdks(modules: Mapping[str, object] = sys.modules) -> list[str]:
    """The modules of COLLECTION_FREE among ``modules`` (this process's imported ones)."""
    return [name for name in COLLECTION_FREE if name in modules]


def ungrouped(items: list[pytest.Item]) -> list[str]:
    """The tests with an ``xdist_group`` mark whose id does not end with their group, as
    pytest-xdist's loadgroup suffixes it (``@name``, names sorted and joined by ``_``)."""
    lost = []
    for item in items:
        names = sorted({str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))
                        for mark in item.iter_markers("xdist_group")})
        if names and not item.nodeid.endswith("@" + "_".join(names)):
            lost.append(item.nodeid)
    return lost


_real_connect = socket.socket.connect
_real_connect_ex = socket.socket.connect_ex
_LOCAL = {"127.0.0.1", "::1", "localhost"}


def _check(address: Any) -> None:
    if isinstance(address, tuple) and address and address[0] not in _LOCAL:
        raise RuntimeError(f"test tried to reach the network: {address!r}")


def _guarded_connect(self: socket.socket, address: Any) -> None:
    _check(address)
    _real_connect(self, address)


def _guarded_connect_ex(self: socket.socket, address: Any) -> int:
    _check(address)
    return _real_connect_ex(self, address)


@pytest.fixture(autouse=True)
def _no_network(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(socket.socket, "connect", _guarded_connect)
    monkeypatch.setattr(socket.socket, "connect_ex", _guarded_connect_ex)
    for var in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL",
                "ROLLCHAT_CONFIG", "ROLLCHAT_SESSIONS_DIR", "ROLLCHAT_PROVIDER",
                "ROLLCHAT_MODEL", "ROLLCHAT_BASE_URL", "ROLLCHAT_AGENT"):
        monkeypatch.delenv(var, raising=False)
    yield


@pytest.fixture(autouse=True)
def _user_dirs(tmp_path_factory: pytest.TempPathFactory,
               monkeypatch: pytest.MonkeyPatch) -> None:
    """HOME and XDG_{CONFIG,DATA,STATE,CACHE}_HOME in a directory of this test's own, for the
    test and the children it starts: platformdirs reads them at each call, so neither sees a
    real ``~/.config/rollchat/config.yml``, history or memory. The children also get the shared
    bytecode cache (see tests/e2e.py) instead of an inherited PYTHONDONTWRITEBYTECODE."""
    home = tmp_path_factory.mktemp("home")
    for var, value in user_dirs(home).items():
        monkeypatch.setenv(var, value)
    monkeypatch.delenv("PYTHONDONTWRITEBYTECODE", raising=False)
    monkeypatch.setenv("PYTHONPYCACHEPREFIX", str(PYCACHE))


@pytest.fixture(autouse=True)
def _reaped_children(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every process a test starts (subprocess, pexpect, or rollchat itself in-process) is
    gone when the test ends, however it ended (a failure, pytest-timeout, Ctrl-C): one still
    running is killed and reaped, so none outlives an interrupted run."""
    started: list[subprocess.Popen[Any] | pexpect.spawn] = []
    popen_init, spawn_init = subprocess.Popen.__init__, pexpect.spawn.__init__

    def track_popen(self: subprocess.Popen[Any], *args: Any, **kwargs: Any) -> None:
        popen_init(self, *args, **kwargs)
        started.append(self)

    def track_spawn(self: pexpect.spawn, *args: Any, **kwargs: Any) -> None:
        spawn_init(self, *args, **kwargs)
        started.append(self)

    monkeypatch.setattr(subprocess.Popen, "__init__", track_popen)
    monkeypatch.setattr(pexpect.spawn, "__init__", track_spawn)
    yield
    forkserver.reap()  # the children the fork server started for the test and left running
    for child in started:
        if not forkserver.is_server(child) and not _mcp_zygote(child):  # (for the session)
            _reap(child)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """The fork servers end with the session (each xdist worker's its own), whatever its
    outcome; they would end anyway when this process does (their control sockets close)."""
    forkserver.stop()
    helpers = sys.modules.get("tests.mcp_helpers")  # (its MCP server zygote: if it was used)
    if helpers is not None:
        helpers.stop_zygote()


def _mcp_zygote(child: object) -> bool:
    """Whether ``child`` is tests/mcp_helpers.py's MCP server zygote (it is imported only by
    the MCP tests)."""
    helpers = sys.modules.get("tests.mcp_helpers")
    return helpers is not None and bool(helpers.is_zygote(child))


def _reap(child: subprocess.Popen[Any] | pexpect.spawn) -> None:
    if isinstance(child, pexpect.spawn):
        if not child.closed:
            with contextlib.suppress(Exception):  # (it may be half gone already)
                child.close(force=True)
        return
    if child.poll() is None:
        with contextlib.suppress(OSError):
            child.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            child.wait(timeout=10)
    for stream in (child.stdin, child.stdout, child.stderr):
        if stream is not None:
            with contextlib.suppress(OSError):
                stream.close()
