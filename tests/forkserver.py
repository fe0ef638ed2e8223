"""The client of the tests' fork server (tests/zygote.py): ``run_piped``'s ``python -m rollchat``
forked from one process per pytest worker that has imported rollchat and the SDKs already,
instead of a new interpreter paying those imports each time; a child that will run an agent
framework's agent forks from a server of that framework's children (``preload``: one per list
of modules), itself forked from the first server, with the framework imported too. The child
is still a real process of its own (streams, cwd, environment, argv, exit status);
ROLLCHAT_TESTS_NO_FORKSERVER=1 turns the servers off, and any failure of one falls back to a
real subprocess with a warning."""

from __future__ import annotations

import contextlib
import json
import locale
import os
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

OFF = "ROLLCHAT_TESTS_NO_FORKSERVER"
PROGRAM = Path(__file__).with_name("zygote.py")
START_DEADLINE = 60.0  # its imports: seconds (a loaded machine: more), under pytest-timeout
PRELOAD_DEADLINE = 100.0  # and a framework's too (Google ADK and litellm: 8 s of CPU)
REPLY_DEADLINE = 30.0  # a fork, or a killed child's end
# Read at interpreter start from the environment (by Python, or the C library: locale, stdio
# encoding, hash seed, flags): a call whose value of one differs runs as a real process.
AT_START = ("PYTHON", "LC_", "LANG")
# What the server did, for the bench and for a reader wondering: calls forked, calls run as a
# real process because their environment differs in what matters, failures (warned).
STATS: Counter[str] = Counter()


class ServerFailed(Exception):
    """The server could not run this call (it is off for the rest of the session)."""


Preload = tuple[str, ...]  # the modules a server imports besides rollchat's: its key


class Server:
    """One running server: its process (the first one's; a framework's server is a child of
    that one, which tells its end on ``caller``), its control socket, the environment it
    started with and the keys its imports read."""

    def __init__(self, env: dict[str, str], preload: Preload = (),
                 first: Server | None = None, bare: bool = False) -> None:
        self.env = env
        self.home = Path(env["HOME"])
        self.control, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.process: subprocess.Popen[bytes] | None = None
        self.caller: socket.socket | None = None
        self.children_cpu = 0.0  # CPU seconds of the children it forked, so far
        self.first = first
        if first is None:
            self.log = open(self.home.parent / "server.log", "wb")  # noqa: SIM115 (its life)
            with theirs:
                self.process = subprocess.Popen(  # stdin and stdout pipes, as a run_piped child's
                    [sys.executable, str(PROGRAM), str(theirs.fileno()), str(self.home.parent),
                     *(["bare"] if bare else [])],
                    pass_fds=[theirs.fileno()],
                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log, env=env,
                    cwd=str(self.home), start_new_session=True)  # a ^C at pytest's terminal
        else:
            self.log = first.log  # (the same log: it writes where the first one does)
            request = json.dumps({"server": list(preload), "env": env}).encode()
            try:
                self.caller, _ = _forked_by(first, request, [theirs.fileno()])
            except BaseException:
                self.control.close()
                raise
            finally:
                theirs.close()
        try:
            ready = self.receive(self.control, PRELOAD_DEADLINE if preload else START_DEADLINE,
                                 "to start")
            if ready["threads"] != 1:
                raise ServerFailed(f"it has {ready['threads']} threads after its imports")
        except BaseException:
            self.stop()
            raise
        self.read: dict[str, str | None] = ready["read"]
        self.own_cpu: float = ready["cpu"]  # and of the server itself

    def receive(self, sock: socket.socket, deadline: float, what: str) -> dict[str, Any]:
        """One message from the server, waited for at most ``deadline`` seconds."""
        with selectors.DefaultSelector() as selector:
            selector.register(sock, selectors.EVENT_READ)
            if not selector.select(deadline):
                raise ServerFailed(f"no answer within {deadline:.0f} s {what}")
        message = sock.recv(1 << 20)
        if not message:
            raise ServerFailed(f"it ended instead of answering {what}{self.last_words()}")
        return json.loads(message)  # type: ignore[no-any-return]

    def last_words(self) -> str:
        with contextlib.suppress(OSError):
            text = Path(self.log.name).read_text(errors="replace").strip()
            if text:
                return f": {text.splitlines()[-1]}"
        return ""

    def differs(self, env: Mapping[str, str]) -> str | None:
        """The first variable whose value at a child's start matters and differs from the
        server's (the child would see the server's), or None."""
        if "*" in self.read:
            return "*"
        keys = set(self.read) | {k for k in (*env, *self.env) if k.startswith(AT_START)}
        return next((key for key in sorted(keys) if env.get(key) != self.env.get(key)), None)

    def stop(self) -> None:
        with contextlib.suppress(OSError):
            self.control.close()  # the server ends at this, killing any child still running
        if self.process is None:  # a framework's server: its end, as the first one saw it
            if self.caller is not None:
                with contextlib.suppress(ServerFailed, OSError, ValueError):
                    ended = self.receive(self.caller, REPLY_DEADLINE, "with its end")
                    if self.first is not None:
                        self.first.children_cpu += ended.get("cpu", 0.0)
                self.caller.close()  # (not ended yet: the first server kills it now)
            return
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=5)
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None:
                stream.close()
        self.log.close()
        shutil.rmtree(self.home.parent, ignore_errors=True)  # (the server's HOME, its log)


_servers: dict[Preload, Server] = {}  # by what each imports besides rollchat's
_off: dict[Preload, str] = {}  # why a server is off (for the rest of the session)
_bare = False  # the servers started import nothing but the standard library (own_servers)
_lock = threading.Lock()


def is_server(process: object) -> bool:
    """Whether ``process`` is a server's (conftest's reaper leaves it to the session's end)."""
    return any(process is server.process for server in list(_servers.values()))


def cpu_seconds() -> float:
    """CPU of the servers and of every child they forked so far (not in this process's
    RUSAGE_CHILDREN: they are not its children)."""
    return sum(s.children_cpu + s.own_cpu for s in list(_servers.values()))


def stop() -> None:
    """End the servers (at the session's end; each also ends by itself when this process
    does)."""
    with _lock:
        for key in sorted(_servers, key=len, reverse=True):  # the first one last
            _servers.pop(key).stop()


@contextlib.contextmanager
def own_servers() -> Iterator[None]:
    """For a test that kills a server or makes one fail: in the block, the servers are the
    test's own, started when first asked for, importing nothing but the standard library (the
    probes such a test runs need no more: tests/zygote.py ``bare``), and one that is off is off
    for the block only; the worker's servers, left alone, serve on after it. (Killed, the
    worker's first server was started again by its next forked chat: rollchat, the SDKs and the
    token tables imported again, seconds of CPU.)"""
    global _servers, _off, _bare
    with _lock:
        saved = _servers, _off, _bare
        _servers, _off, _bare = {}, {}, True
    try:
        yield
    finally:
        stop()
        with _lock:
            _servers, _off, _bare = saved


def _get(make_env: Callable[[Path], dict[str, str]], preload: Preload = ()) -> Server | None:
    """The server of ``preload`` (started if need be: a framework's from the first one, which
    is started first); None when it is off."""
    with _lock:
        for key in ((), preload) if preload else ((),):
            if key not in _servers and key not in _off:
                first = _servers.get(())
                if key and first is None:
                    break  # (the first server is off: so are the ones it would fork)
                try:
                    home = first.home if first else Path(
                        tempfile.mkdtemp(prefix="rollchat-forkserver-")) / "home"
                    _servers[key] = Server(make_env(home), key, first, bare=_bare)
                except (ServerFailed, OSError) as error:
                    _fail(f"it did not start: {error}", key)
        return _servers.get(preload)


def _fail(why: str, preload: Preload) -> None:
    _off[preload] = why
    STATS["failed"] += 1
    which = f" (of children importing {', '.join(preload)})" if preload else ""
    warnings.warn(f"the tests' fork server{which} is off, children run as real processes: "
                  f"{why}", RuntimeWarning, stacklevel=3)
    server = _servers.pop(preload, None)
    if server is not None:
        with contextlib.suppress(Exception):
            server.stop()


def run(args: tuple[str, ...], cwd: Path, text: str | None, env: dict[str, str], timeout: float,
        make_env: Callable[[Path], dict[str, str]], module: str = "rollchat",
        preload: Preload = ()) -> subprocess.CompletedProcess[str] | None:
    """``python -m MODULE ARGS`` forked by the server, as ``subprocess.run(..., input=text,
    capture_output=True, text=True, timeout=timeout)`` would run it (``text`` None: stdin is
    /dev/null, ``stdin=subprocess.DEVNULL``); None when it should run
    as a real process instead (the server off or failed, or ``env`` differs from the server's
    in what is read at start). ``make_env(home)``: the environment to start the server with;
    ``preload``: the modules the child will import anyway (an agent framework's), forked from
    the server that imported them."""
    if os.environ.get(OFF) == "1":
        return None
    server = _get(make_env, preload)
    if server is None:
        return None
    if server.differs(env) is not None or not cwd.is_dir():  # (the latter: subprocess raises)
        STATS["real"] += 1
        return None
    try:
        done = _call(server, module, args, cwd, text, env, timeout)
    except (ServerFailed, OSError) as error:  # (OSError: a socket or pipe to it failed)
        _fail(f"{type(error).__name__}: {error}", preload)
        return None
    STATS["forked"] += 1
    return done


class Forked:
    """A child forked by the server that runs on while the test talks to it: what
    ``subprocess.Popen(argv, stdin=PIPE or DEVNULL, stdout=PIPE, stderr=PIPE or STDOUT,
    text=True)`` gives, for what the tests do with one (its streams, ``send_signal``, ``kill``,
    ``wait``, ``communicate``). Its signals are sent from here by a pidfd of the child, as
    ``Popen.send_signal`` sends them: delivered when the call returns (through the server, a
    signal came after what the test did next: a stdin closed right after a SIGTERM reached the
    chat first, and it ended on the end of its input instead); through the server (by its own
    pidfd) when this process cannot open one."""

    def __init__(self, server: Server, mine: socket.socket, pid: int, args: list[str],
                 ours: tuple[int, int, int], encoding: str) -> None:
        self.args, self.pid = args, pid
        self.returncode: int | None = None
        self._server, self._mine = server, mine
        self._pidfd: int | None = None
        with contextlib.suppress(OSError):  # (gone already: its end is on its way)
            self._pidfd = os.pidfd_open(pid)
        stdin_w, stdout_r, stderr_r = ours
        # as Popen's text mode: writes buffered (flush to send them), universal newlines read
        self.stdin = (open(stdin_w, "w", encoding=encoding, closefd=True)  # noqa: SIM115
                      if stdin_w != -1 else None)
        self.stdout = (open(stdout_r, encoding=encoding)  # noqa: SIM115 (the child's life)
                       if stdout_r != -1 else None)
        self.stderr = open(stderr_r, encoding=encoding) if stderr_r != -1 else None  # noqa: SIM115

    def poll(self) -> int | None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.wait(0)
        return self.returncode

    def send_signal(self, signum: int) -> None:
        if self.returncode is None:
            with contextlib.suppress(OSError):  # (it ended, or the server reported its end)
                if self._pidfd is not None:
                    signal.pidfd_send_signal(self._pidfd, signum)
                else:
                    self._mine.send(f"signal {int(signum)}".encode())

    def kill(self) -> None:
        if self.returncode is None:
            with contextlib.suppress(OSError):
                self._mine.send(b"kill")

    def wait(self, timeout: float | None = None) -> int:
        """Its exit status (as ``os.waitstatus_to_exitcode``); TimeoutExpired at ``timeout``."""
        if self.returncode is not None:
            return self.returncode
        with selectors.DefaultSelector() as selector:
            selector.register(self._mine, selectors.EVENT_READ)
            if not selector.select(timeout):
                raise subprocess.TimeoutExpired(self.args, timeout or 0)
        message = self._mine.recv(1 << 16)
        if not message:
            raise ServerFailed(f"it ended during a call{self._server.last_words()}")
        ended = json.loads(message)
        if "error" in ended:
            raise ServerFailed(f"a child failed: {ended['error'].splitlines()[-1]}")
        self._server.children_cpu += ended["cpu"]
        self._server.own_cpu = ended["server_cpu"]
        self.returncode = int(ended["code"])
        self._mine.close()
        self._close_pidfd()
        return self.returncode

    def _close_pidfd(self) -> None:
        if self._pidfd is not None:
            with contextlib.suppress(OSError):
                os.close(self._pidfd)
            self._pidfd = None

    def communicate(self, input: str | None = None,
                    timeout: float | None = None) -> tuple[str, str | None]:
        """``input`` written and stdin closed, stdout and stderr read to their ends (what a
        ``readline`` before left in their buffers included), its end waited for; as
        Popen.communicate, TimeoutExpired at ``timeout`` leaves the child running."""
        deadline = None if timeout is None else time.monotonic() + timeout
        read: dict[str, str] = {}

        def reader(name: str, stream: Any) -> None:
            read[name] = stream.read()

        readers = [threading.Thread(target=reader, args=(name, stream), daemon=True)
                   for name, stream in (("out", self.stdout), ("err", self.stderr))
                   if stream is not None and not stream.closed]
        for thread in readers:
            thread.start()
        if self.stdin is not None and not self.stdin.closed:
            with contextlib.suppress(BrokenPipeError):  # it stopped reading: as Popen does
                if input:
                    self.stdin.write(input)
                self.stdin.close()
        for thread in readers:
            thread.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
            if thread.is_alive():
                raise subprocess.TimeoutExpired(self.args, timeout or 0)
        self.wait(None if deadline is None else max(0.0, deadline - time.monotonic()))
        for stream in (self.stdout, self.stderr):
            if stream is not None:
                stream.close()
        return read.get("out", ""), read.get("err") if self.stderr is not None else None

    def reap(self) -> None:
        """Killed if it still runs, its end waited for, every stream closed (a test's end)."""
        try:
            if self.returncode is None:
                self.kill()
                with contextlib.suppress(subprocess.TimeoutExpired, ServerFailed, OSError):
                    self.wait(REPLY_DEADLINE)
        finally:
            for stream in (self.stdin, self.stdout, self.stderr):
                if stream is not None:
                    with contextlib.suppress(OSError):
                        stream.close()
            self._mine.close()  # (the server kills a child whose caller is gone)
            self._close_pidfd()


_started: list[Forked] = []  # the children started and not reaped yet (see reap)


def start(args: tuple[str, ...], cwd: Path, env: dict[str, str],
          make_env: Callable[[Path], dict[str, str]], *, stdin: bool,
          merge_stderr: bool = False, module: str = "rollchat",
          preload: Preload = ()) -> Forked | None:
    """``python -m MODULE ARGS`` forked by the server and left running, as ``Popen`` starts
    it: stdin a pipe (or /dev/null), stdout a pipe, stderr a pipe or (``merge_stderr``) the
    same as stdout; None when it should run as a real process instead (see ``run``)."""
    if os.environ.get(OFF) == "1":
        return None
    server = _get(make_env, preload)
    if server is None:
        return None
    if server.differs(env) is not None or not cwd.is_dir():
        STATS["real"] += 1
        return None
    stdin_r, stdin_w = os.pipe() if stdin else (os.open(os.devnull, os.O_RDONLY), -1)
    stdout_r, stdout_w = os.pipe()
    stderr_r, stderr_w = (-1, stdout_w) if merge_stderr else os.pipe()
    try:
        mine, pid = _launch(server, module, args, cwd, env, (stdin_r, stdout_w, stderr_w))
    except (ServerFailed, OSError) as error:
        for fd in (stdin_w, stdout_r, stderr_r):
            if fd != -1:
                os.close(fd)
        _fail(f"{type(error).__name__}: {error}", preload)
        return None
    STATS["forked"] += 1
    child = Forked(server, mine, pid, [sys.executable, "-m", module, *args],
                   (stdin_w, stdout_r, stderr_r), locale.getpreferredencoding(False))
    _started.append(child)
    return child


def start_terminal(args: tuple[str, ...], cwd: Path, env: dict[str, str],
                   make_env: Callable[[Path], dict[str, str]], terminal: int, *,
                   preload: Preload = (), module: str = "rollchat") -> Forked | None:
    """``python -m MODULE ARGS`` forked by the server (of ``preload``) with ``terminal`` (a
    pseudo-terminal's slave end: closed here) as its stdin, stdout, stderr and controlling
    terminal, in a session of its own, as ``pexpect.spawn`` starts it; left running (its
    streams are the terminal's: none here). None when it should run as a real process."""
    server = None if os.environ.get(OFF) == "1" else _get(make_env, preload)
    if server is not None and (server.differs(env) is not None or not cwd.is_dir()):
        STATS["real"] += 1
        server = None
    if server is None:
        os.close(terminal)
        return None
    try:
        mine, pid = _launch(server, module, args, cwd, env, (terminal,) * 3, terminal=True)
    except (ServerFailed, OSError) as error:
        _fail(f"{type(error).__name__}: {error}", preload)
        return None
    STATS["forked"] += 1
    child = Forked(server, mine, pid, [sys.executable, "-m", module, *args], (-1, -1, -1),
                   locale.getpreferredencoding(False))
    _started.append(child)
    return child


def reap() -> None:
    """Every child ``start`` started: killed if it still runs, its streams closed (conftest
    calls this at each test's end, however it ended)."""
    while _started:
        _started.pop().reap()


def launch(args: tuple[str, ...], cwd: Path, env: dict[str, str],
           make_env: Callable[[Path], dict[str, str]], streams: tuple[int, int, int], *,
           umask: int, module: str = "rollchat") -> tuple[socket.socket, int] | None:
    """A child with another process's ``streams`` (its stdin, stdout, stderr: closed here) and
    ``umask`` (tests/forkrelay.py): the socket the server tells its end on (see ``ended``;
    closed: the child is killed) and its pid; None when it should run as a real process."""
    server = None if os.environ.get(OFF) == "1" else _get(make_env)
    if server is not None and (server.differs(env) is not None or not cwd.is_dir()):
        STATS["real"] += 1
        server = None
    if server is None:
        for fd in streams:
            os.close(fd)
        return None
    try:
        started = _launch(server, module, args, cwd, env, streams, umask)
    except (ServerFailed, OSError) as error:
        _fail(f"{type(error).__name__}: {error}", ())
        return None
    STATS["forked"] += 1
    return started


def ended(mine: socket.socket) -> int | None:
    """The exit status the server tells on ``mine`` (a child of ``launch``: waited for until
    it ends), or None if the server ended first."""
    message = b""
    with contextlib.suppress(OSError):
        message = mine.recv(1 << 16)
    end = json.loads(message) if message else {}
    if "code" not in end:
        return None
    server = _servers.get(())  # (launch's children are the plain server's)
    if server is not None:
        server.children_cpu += end["cpu"]
        server.own_cpu = end["server_cpu"]
    return int(end["code"])


def _launch(server: Server, module: str, args: tuple[str, ...], cwd: Path,
            env: dict[str, str], streams: tuple[int, int, int],
            umask: int | None = None, terminal: bool = False) -> tuple[socket.socket, int]:
    """Ask the server for a child with ``streams`` (its stdin, stdout, stderr: closed here,
    whatever happens) and ``umask`` (None: this process's): the socket it answers on about
    that child, and the child's pid."""
    request = json.dumps({"module": module, "args": list(args), "cwd": str(cwd), "env": env,
                          "umask": _umask() if umask is None else umask,
                          "terminal": terminal}).encode()
    mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        try:
            socket.send_fds(server.control, [request], [*streams, theirs.fileno()])
        except OSError as error:
            raise ServerFailed(f"it is gone ({error}){server.last_words()}") from error
        finally:
            for fd in sorted(set(streams)):
                os.close(fd)
            theirs.close()
        started = server.receive(mine, REPLY_DEADLINE, "with a child")
        if "error" in started:  # (a child that failed at once may say so before the server)
            raise ServerFailed(f"a child failed: {started['error'].splitlines()[-1]}")
    except BaseException:
        mine.close()
        raise
    return mine, int(started["pid"])


def _forked_by(server: Server, request: bytes, fds: list[int]) -> tuple[socket.socket, int]:
    """Ask ``server`` for a server of a framework's children, ``fds`` its control socket: the
    socket ``server`` tells its end on, and its pid."""
    mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        try:
            socket.send_fds(server.control, [request], [theirs.fileno(), *fds])
        except OSError as error:
            raise ServerFailed(f"it is gone ({error}){server.last_words()}") from error
        finally:
            theirs.close()
        started = server.receive(mine, REPLY_DEADLINE, "with a server")
        if "error" in started:
            raise ServerFailed(f"no server forked: {started['error'].splitlines()[-1]}")
    except BaseException:
        mine.close()
        raise
    return mine, int(started["pid"])


def _call(server: Server, module: str, args: tuple[str, ...], cwd: Path, text: str | None,
          env: dict[str, str], timeout: float) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", module, *args]
    encoding = locale.getpreferredencoding(False)  # what subprocess's text mode uses
    data = (text or "").encode(encoding)
    stdin_r, stdin_w = os.pipe() if text is not None else (os.open(os.devnull, os.O_RDONLY), -1)
    stdout_r, stdout_w = os.pipe()
    stderr_r, stderr_w = os.pipe()
    ours = [stdin_w, stdout_r, stderr_r]
    deadline = time.monotonic() + timeout
    ended: dict[str, Any] | None = None
    mine: socket.socket | None = None
    try:
        mine, _ = _launch(server, module, args, cwd, env, (stdin_r, stdout_w, stderr_w))
        out, err, ended = _communicate(server, mine, ours, data, deadline)
        if ended is None:  # the timeout: killed, as subprocess.run kills it
            mine.send(b"kill")
            ended = server.receive(mine, REPLY_DEADLINE, "with the killed child's end")
            raise subprocess.TimeoutExpired(command, timeout, output=out, stderr=err)
    finally:
        if ended is not None:
            server.children_cpu += ended["cpu"]
            server.own_cpu = ended["server_cpu"]
        if mine is not None:
            mine.close()  # before its end was read (interrupted): the server kills the child
        for fd in ours:
            with contextlib.suppress(OSError):
                os.close(fd)
    return subprocess.CompletedProcess(command, ended["code"], _text(out, encoding),
                                       _text(err, encoding))


def _umask() -> int:
    """This process's umask, which a child it started would inherit (read, not set and set back:
    another thread may be creating a file)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("Umask:"):
            return int(line.split()[1], 8)
    raise OSError("no Umask in /proc/self/status")


def _communicate(server: Server, mine: socket.socket, ours: list[int], data: bytes,
                 deadline: float) -> tuple[bytes, bytes, dict[str, Any] | None]:
    """Write ``data`` to the child's stdin, read its stdout and stderr to their ends and its
    exit status, until ``deadline``: (stdout, stderr, its end or None at the deadline)."""
    stdin_w, stdout_r, stderr_r = ours
    chunks: dict[int, list[bytes]] = {stdout_r: [], stderr_r: []}
    ended: dict[str, Any] | None = None
    with selectors.DefaultSelector() as selector:
        if data:
            os.set_blocking(stdin_w, False)
            selector.register(stdin_w, selectors.EVENT_WRITE)
        elif stdin_w != -1:
            os.close(stdin_w)
            ours[0] = -1
        for fd in (stdout_r, stderr_r):
            selector.register(fd, selectors.EVENT_READ)
        selector.register(mine, selectors.EVENT_READ)
        written = 0
        while selector.get_map():
            left = deadline - time.monotonic()
            if left <= 0:
                return b"".join(chunks[stdout_r]), b"".join(chunks[stderr_r]), None
            for key, _ in selector.select(left):
                if key.fileobj is mine:
                    message = mine.recv(1 << 16)
                    if not message:
                        raise ServerFailed(f"it ended during a call{server.last_words()}")
                    ended = json.loads(message)
                    if "error" in ended:  # the child failed before it ran the module
                        raise ServerFailed(f"a child failed: {ended['error'].splitlines()[-1]}")
                    selector.unregister(mine)
                elif key.fileobj == stdin_w:
                    try:
                        written += os.write(stdin_w, data[written:written + 65536])
                    except BrokenPipeError:  # the child stopped reading: as subprocess does
                        written = len(data)
                    if written >= len(data):
                        selector.unregister(stdin_w)
                        os.close(stdin_w)
                        ours[0] = -1
                else:
                    fd = int(key.fd)
                    chunk = os.read(fd, 1 << 16)
                    if chunk:
                        chunks[fd].append(chunk)
                    else:
                        selector.unregister(fd)
    return b"".join(chunks[stdout_r]), b"".join(chunks[stderr_r]), ended


def _text(data: bytes, encoding: str) -> str:
    """As subprocess's text mode decodes (universal newlines)."""
    return data.decode(encoding).replace("\r\n", "\n").replace("\r", "\n")
