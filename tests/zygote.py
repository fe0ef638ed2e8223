"""The tests' fork server (the client side is tests/forkserver.py): imports rollchat's CLI, the
chat and the SDKs once, then forks one child per request that runs ``python -m rollchat`` as a
fresh process would: the caller's stdin/stdout/stderr, cwd, environment and argv. Asked for a
server of one agent framework's children, it forks one that imports that framework and
rollchat's adapter of it (what those children import anyway) on top of what it has, then
serves as this one does.

Usage (by tests/forkserver.py only): python tests/zygote.py CONTROL_FD DIRECTORY [bare]
(DIRECTORY: its HOME and log, removed when it ends because its client did; ``bare``: nothing
imported but the standard library, for a test's own server: forkserver.own_servers)
Standard library only until the preload: the server itself starts no thread and holds no state
a child could inherit besides the imported modules (and the env keys read while importing them,
which it reports, so the client runs a real process when a call's value of one differs)."""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import json
import os
import pkgutil
import runpy
import selectors
import shutil
import signal
import socket
import sys
import termios
import threading
import time
import traceback
from types import TracebackType
from typing import Any

# Not imported in the server: the agent frameworks (heavy, and a chat without a framework agent
# must not have them loaded; the server of one framework's children, forked from this one,
# imports it and its adapter), the MCP/wire servers rollchat can serve, and __main__
# (run as a fresh module in each child, as python -m does; imported before, runpy warns).
SKIPPED = ("rollchat.agents.frameworks", "rollchat.server", "rollchat.__main__")
THIRD_PARTY = ("anthropic", "openai", "tiktoken", "mcp", "pydantic", "yaml", "rich",
               "prompt_toolkit", "typer", "click", "markdown_it", "platformdirs")


# Where the environment is read on behalf of a caller (the reader is the caller's module)
PASSING = ("os", "posixpath", "genericpath", "collections.abc", "pathlib")
# Readers whose import-time reads the child refreshes (see refresh_user_base)
REFRESHED = ("sysconfig", "site")
# Readers whose import-time reads no child uses: botocore (AWS's SDK, which Strands imports for
# its default Bedrock model) makes its ~/.aws cache and model paths from HOME; the agents run in
# the tests use OpenAI-compatible clients, never AWS.
UNUSED = ("botocore",)


def preload(more: tuple[str, ...] = ()) -> dict[str, str | None]:
    """Import what a chat imports, then ``more``; the environment keys read meanwhile, with
    their values."""
    read: set[str] = set()
    getitem, iterate = os._Environ.__getitem__, os._Environ.__iter__  # type: ignore[attr-defined]

    def recording_getitem(self: Any, key: str) -> str:
        frame = sys._getframe(1)
        while frame.f_back is not None and frame.f_globals.get("__name__") in PASSING:
            frame = frame.f_back
        reader = str(frame.f_globals.get("__name__"))
        if reader not in REFRESHED and not reader.startswith(UNUSED):
            read.add(key)
        return getitem(self, key)  # type: ignore[no-any-return]

    def recording_iter(self: Any) -> Any:
        read.add("*")  # the whole environment was read: every call runs as a real process
        return iterate(self)

    os._Environ.__getitem__ = recording_getitem  # type: ignore[attr-defined]
    os._Environ.__iter__ = recording_iter  # type: ignore[attr-defined]
    try:
        for name in THIRD_PARTY:
            __import__(name)
        import rollchat

        for module in pkgutil.walk_packages(rollchat.__path__, "rollchat."):
            if not module.name.startswith(SKIPPED):
                __import__(module.name)
        for name in more:
            __import__(name)
    finally:
        os._Environ.__getitem__ = getitem  # type: ignore[attr-defined]
        os._Environ.__iter__ = iterate  # type: ignore[attr-defined]
    return {key: os.environ.get(key) for key in sorted(read)}


def preload_encodings() -> None:
    """Parse the vendored tiktoken tables (cl100k_base, o200k_base) once here, after the
    recorded imports: a chat counts tokens with one, and each child parsed it again from its
    own (new, empty) cache directory, about a second of CPU per child that counted. (The
    server's cache directory is its own HOME's: what it reads here is not read at a child's
    start, it is held by rollchat.models.tokens as a chat that counted once holds it.)"""
    from rollchat.models.tokens import TokenCounter

    for model in ("gpt-4", "gpt-4o"):  # (tiktoken's table: cl100k_base, o200k_base)
        TokenCounter(model, allow_download=False).count_text("preloaded")


def threads() -> int:
    """Threads of this process, Python's and native ones (a fork copies only the caller)."""
    return max(threading.active_count(), len(os.listdir("/proc/self/task")))


def fork_alone(what: str) -> int:
    """``os.fork()`` of this process (``what``: its name in the error), refused unless it runs
    one thread (a fork copies only the caller: a lock another thread held would stay held),
    its output flushed first (else the child would write it again)."""
    count = threads()
    if count != 1:
        raise RuntimeError(f"{what} has {count} threads: a fork is unsafe")
    sys.stdout.flush()
    sys.stderr.flush()
    return os.fork()


class Server:
    """The loop: requests on the control socket, each child's end (pidfd) and its caller's
    socket (a kill request, or the caller gone: the child is killed)."""

    def __init__(self, control: socket.socket, read: dict[str, str | None],
                 directory: str | None = None) -> None:
        self.control = control
        self.read = read  # the environment keys its imports read (with their values)
        self.directory = directory  # removed when it ends (the first server's: sys.argv[2])
        self.selector = selectors.DefaultSelector()
        self.selector.register(control, selectors.EVENT_READ, ("control", 0))
        self.calls: dict[int, tuple[socket.socket, int]] = {}  # pid -> (caller, pidfd)

    def serve(self) -> None:
        while True:
            for key, _ in self.selector.select():
                kind, pid = key.data
                if kind == "control":
                    if not self.request():
                        return
                elif pid not in self.calls:  # its end, handled in this round, closed its caller
                    continue
                elif kind == "caller":
                    self.caller(pid)
                else:
                    self.ended(pid)

    def request(self) -> bool:
        message, fds, _, _ = socket.recv_fds(self.control, 1 << 20, 8)
        if not message:  # the pytest worker is gone (ended, or killed): so are its children
            for pid in list(self.calls):
                self.kill(pid)
            if self.directory is not None:
                shutil.rmtree(self.directory, ignore_errors=True)
            return False
        request = json.loads(message)
        serving = "server" in request  # a server of a framework's children: [caller, control]
        caller = socket.socket(fileno=fds[0] if serving else fds[3])
        passed = fds[1:] if serving else fds[:3]  # (the child's: closed here once it has them)
        try:
            pid = fork_alone("the fork server")
            if pid == 0:
                if serving:
                    self.server(request, passed[0], caller)
                self.child(request, passed, caller)
            pidfd = os.pidfd_open(pid)
        except Exception as error:  # the caller runs a real process instead
            with_reply(caller, {"error": f"{type(error).__name__}: {error}"})
            caller.close()
            return True
        finally:
            for fd in passed:
                os.close(fd)
        self.calls[pid] = (caller, pidfd)
        self.selector.register(caller, selectors.EVENT_READ, ("caller", pid))
        self.selector.register(pidfd, selectors.EVENT_READ, ("ended", pid))
        with_reply(caller, {"pid": pid})
        return True

    def caller(self, pid: int) -> None:
        """A signal for the child ("signal N": a test's Ctrl-C), a kill request (the caller's
        timeout), or the caller gone (interrupted, killed)."""
        caller, pidfd = self.calls[pid]
        message = b""
        with contextlib.suppress(OSError):
            message = caller.recv(64)
        if message.startswith(b"signal "):
            with contextlib.suppress(ProcessLookupError):  # (ended, its end not reaped yet)
                signal.pidfd_send_signal(pidfd, int(message.split()[1]))
            return
        self.selector.unregister(caller)
        self.kill(pid)  # its end is still reaped (ended)

    def kill(self, pid: int) -> None:
        _, pidfd = self.calls[pid]
        # (by its pidfd: never another process given its pid; one that has ended is reaped next)
        with contextlib.suppress(ProcessLookupError):
            signal.pidfd_send_signal(pidfd, signal.SIGKILL)

    def ended(self, pid: int) -> None:
        caller, pidfd = self.calls.pop(pid)
        _, status, usage = os.wait4(pid, 0)
        self.selector.unregister(pidfd)
        os.close(pidfd)
        with_reply(caller, {"code": os.waitstatus_to_exitcode(status),
                            "cpu": usage.ru_utime + usage.ru_stime, "server_cpu": own_cpu()})
        if any(key.fileobj is caller for key in self.selector.get_map().values()):
            self.selector.unregister(caller)
        caller.close()

    def forget(self) -> None:
        """In a forked child: none of this server's sockets and pidfds."""
        self.selector.close()
        self.control.close()
        for other, pidfd in self.calls.values():
            other.close()
            os.close(pidfd)

    def server(self, request: dict[str, Any], control_fd: int, caller: socket.socket) -> None:
        """In the forked child: become the server of one framework's children (the modules
        ``request["server"]`` imported, with the environment ``request["env"]``), serving on
        ``control_fd`` until its client closes it; never returns. Its end (or a failure to
        import) is what its client sees on that socket; this server tells its end on
        ``caller``, as for any child."""
        code = 1
        try:
            self.forget()
            caller.close()
            os.environ.clear()
            os.environ.update(request["env"])
            control = socket.socket(fileno=control_fd)
            read = {**self.read, **preload(tuple(request["server"]))}
            ready(control, read)
            Server(control, read).serve()
            code = 0
        except BaseException:
            traceback.print_exc()  # (into the server's log: the client says it did not start)
        finally:
            with contextlib.suppress(Exception):
                sys.stderr.flush()
            os._exit(code)

    def child(self, request: dict[str, Any], fds: list[int], caller: socket.socket) -> None:
        """In the forked child: become ``python -m rollchat ARGS`` with the caller's streams,
        cwd and environment; never returns."""
        try:
            self.forget()
            for target, fd in enumerate(fds):
                os.dup2(fd, target)
            if request.get("terminal"):  # a pty's: its controlling terminal, as pexpect's child
                os.setsid()
                fcntl.ioctl(0, termios.TIOCSCTTY, 0)
            keep = caller.fileno()  # (closed once the rest is done, or with a failure on it)
            os.closerange(3, keep)  # as subprocess's close_fds does
            os.closerange(keep + 1, os.sysconf("SC_OPEN_MAX"))
            os.chdir(request["cwd"])
            os.umask(request["umask"])  # the caller's, as a child of it inherits
            os.environ.clear()
            os.environ.update(request["env"])
            time.tzset()  # time.timezone/tzname were computed from the server's TZ
            refresh_user_base()
            sys.path.insert(0, os.getcwd())  # what -m puts first
            sys.orig_argv = [sys.executable, "-m", request["module"], *request["args"]]
            sys.argv = ["-m", *request["args"]]  # run_module sets argv[0] to the module's path
        except BaseException as error:  # the server's part failed: the caller runs a real one
            with_reply(caller, {"error": "".join(traceback.format_exception(error))})
            os._exit(1)
        caller.close()
        os._exit(run(request["module"]))


def refresh_user_base() -> None:
    """The user base and site directory (from HOME): site computed them at the server's start,
    sysconfig's config vars when zoneinfo was imported."""
    import site
    import sysconfig

    site.USER_BASE = site.USER_SITE = None
    site.getusersitepackages()  # (sets USER_BASE and USER_SITE again)
    config = sysconfig._CONFIG_VARS  # type: ignore[attr-defined]
    if config is not None and "userbase" in config:
        config["userbase"] = sysconfig._getuserbase()  # type: ignore[attr-defined]


def run(module: str) -> int:
    """``module`` (rollchat) as ``python -m`` runs it, then the interpreter's shutdown: its
    exit status (SystemExit's code; 1 and the traceback for an uncaught exception)."""
    try:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
        code = 0
    except SystemExit as done:
        code = exit_code(done)
    except BaseException as error:
        error.__traceback__ = module_frames(error.__traceback__)  # (what the hook prints)
        sys.excepthook(type(error), error, error.__traceback__)
        code = -signal.SIGINT if isinstance(error, KeyboardInterrupt) else 1
    return finish(code)


def module_frames(tb: TracebackType | None) -> TracebackType | None:
    """The traceback from the module's own frames on (not this server's nor runpy's: python -m
    shows none of this file's, and runpy's frozen frames as two lines without source)."""
    while tb is not None and tb.tb_frame.f_code.co_filename in (__file__, "<frozen runpy>"):
        tb = tb.tb_next
    return tb


def exit_code(done: SystemExit) -> int:
    if done.code is None:
        return 0
    if isinstance(done.code, int):
        return done.code
    print(done.code, file=sys.stderr)
    return 1


def finish(code: int) -> int:
    """What Py_FinalizeEx does before the process ends: wait for non-daemon threads, run the
    atexit functions, flush the standard streams (stdout failing: status 120)."""
    threading._shutdown()  # type: ignore[attr-defined]
    atexit._run_exitfuncs()
    try:
        sys.stdout.flush()
    except Exception:
        code = 120
    with contextlib.suppress(Exception):
        sys.stderr.flush()
    if code < 0:  # an uncaught KeyboardInterrupt: Python ends by the signal itself
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    return code


def own_cpu() -> float:
    usage = os.times()
    return usage.user + usage.system


def with_reply(caller: socket.socket, message: dict[str, Any]) -> None:
    with contextlib.suppress(OSError):  # the caller is gone
        caller.send(json.dumps(message).encode())


def main() -> None:
    control = socket.socket(fileno=int(sys.argv[1]))
    del sys.path[0]  # this script's directory (tests/): nothing is imported from it
    bare = sys.argv[3:] == ["bare"]
    read = {} if bare else preload()
    if not bare:
        preload_encodings()
    ready(control, read)
    Server(control, read, sys.argv[2]).serve()


def ready(control: socket.socket, read: dict[str, str | None]) -> None:
    control.send(json.dumps({"read": read, "threads": threads(), "cpu": own_cpu(),
                             "modules": len(sys.modules)}).encode())


if __name__ == "__main__":
    main()
