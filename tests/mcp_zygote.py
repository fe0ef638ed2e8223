"""The MCP tests' server zygote (the client side: tests/mcp_helpers.py; its callers:
tests/mcp_launch.py): imports the ``mcp`` SDK's server once (seconds of CPU: pydantic builds
its types), then forks one Python MCP test server (a script such as tests/mcp_server.py) per
launch (or ``python -m MODULE``: a server that has the SDK in its imports), with the
launcher's stdin/stdout/stderr, cwd, environment, umask and argv.

Usage (by tests/mcp_helpers.py only): python tests/mcp_zygote.py CONTROL_FD SOCKET [bare]
(it ends, killing the servers still running and removing SOCKET's folder, when CONTROL_FD's
other end closes: its pytest worker is done or gone; ``cpu`` sent there: it answers its CPU
and its ended children's; ``bare``: no SDK imported, for a test's own zygote:
mcp_helpers.own_zygote).
Standard library only until the preload; no thread at a fork."""

from __future__ import annotations

import contextlib
import json
import os
import runpy
import selectors
import shutil
import signal
import socket
import sys
import time
import traceback
from pathlib import Path
from typing import Any

sys.path[0] = str(Path(__file__).resolve().parent.parent)  # (for tests.zygote, not tests/*)

from tests.zygote import (  # noqa: E402
    exit_code,
    finish,
    fork_alone,
    refresh_user_base,
    threads,
    with_reply,
)

PRELOAD = ("mcp.server.mcpserver", "mcp.server.mcpserver.exceptions", "mcp.types")


class Zygote:
    """The loop: the control socket (its end: every child killed), the launchers' connections
    (a request, a signal for its child, or the launcher gone: its child killed) and each
    child's end (pidfd: told to its launcher)."""

    def __init__(self, control: socket.socket, listener: socket.socket) -> None:
        self.control, self.listener = control, listener
        self.selector = selectors.DefaultSelector()
        self.selector.register(control, selectors.EVENT_READ, ("control", None))
        self.selector.register(listener, selectors.EVENT_READ, ("listener", None))
        self.children: dict[socket.socket, tuple[int, int]] = {}  # launcher -> (pid, pidfd)

    def serve(self) -> None:
        while True:
            for key, _ in self.selector.select():
                kind, conn = key.data
                if kind == "control" and self.control.recv(16) == b"cpu":
                    times = os.times()  # (its children's: those it has reaped)
                    with_reply(self.control, {"cpu": times.user + times.system
                                              + times.children_user + times.children_system})
                elif kind == "control":  # (its other end closed)
                    for _, pidfd in self.children.values():
                        with contextlib.suppress(ProcessLookupError):
                            signal.pidfd_send_signal(pidfd, signal.SIGKILL)
                    return
                elif kind == "listener":
                    conn, _ = self.listener.accept()
                    self.selector.register(conn, selectors.EVENT_READ, ("launcher", conn))
                elif kind == "launcher":
                    self.launcher(conn)
                else:
                    self.ended(conn)

    def launcher(self, conn: socket.socket) -> None:
        try:
            message, fds, _, _ = socket.recv_fds(conn, 1 << 20, 3)
        except OSError:
            message, fds = b"", []
        if conn not in self.children:  # its first message: the request
            if len(fds) == 3 and message:
                self.fork(conn, json.loads(message), fds)
            else:
                for fd in fds:
                    os.close(fd)
                self.drop(conn)
            return
        _, pidfd = self.children[conn]
        if message.startswith(b"signal "):
            with contextlib.suppress(ProcessLookupError):
                signal.pidfd_send_signal(pidfd, int(message.split()[1]))
            return
        # the launcher is gone (killed): so is its child; its end is still reaped (ended)
        self.selector.unregister(conn)
        with contextlib.suppress(ProcessLookupError):
            signal.pidfd_send_signal(pidfd, signal.SIGKILL)

    def fork(self, conn: socket.socket, request: dict[str, Any], fds: list[int]) -> None:
        try:
            pid = fork_alone("the zygote")
            if pid == 0:
                self.child(request, fds, conn)
            pidfd = os.pidfd_open(pid)
        except Exception as error:  # the launcher runs the real server instead
            with_reply(conn, {"error": f"{type(error).__name__}: {error}"})
            self.drop(conn)
            return
        finally:
            for fd in fds:
                os.close(fd)
        self.children[conn] = (pid, pidfd)
        self.selector.register(pidfd, selectors.EVENT_READ, ("ended", conn))
        with_reply(conn, {"pid": pid})

    def ended(self, conn: socket.socket) -> None:
        pid, pidfd = self.children.pop(conn)
        _, status, _ = os.wait4(pid, 0)
        self.selector.unregister(pidfd)
        os.close(pidfd)
        with_reply(conn, {"code": os.waitstatus_to_exitcode(status)})
        self.drop(conn)

    def drop(self, conn: socket.socket) -> None:
        if any(key.fileobj is conn for key in self.selector.get_map().values()):
            self.selector.unregister(conn)
        conn.close()

    def child(self, request: dict[str, Any], fds: list[int], conn: socket.socket) -> None:
        """In the forked child: become ``python SCRIPT ARGS`` (``python -m MODULE ARGS``) with
        the launcher's streams, cwd, environment and umask; never returns."""
        try:
            self.selector.close()
            for sock in (self.control, self.listener, conn, *self.children):
                sock.detach()  # closed below by number (never later: the number is reused)
            for target, fd in enumerate(fds):
                os.dup2(fd, target)
            os.closerange(3, os.sysconf("SC_OPEN_MAX"))  # as a new process has them
            os.chdir(request["cwd"])
            os.umask(request["umask"])
            os.environ.clear()
            os.environ.update(request["env"])
            time.tzset()
            refresh_user_base()
            os.setpgid(0, 0)  # in a group of its own, not the zygote's
            for signum in (signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1,
                           signal.SIGUSR2, signal.SIGCHLD):
                signal.signal(signum, signal.SIG_DFL)
            signal.signal(signal.SIGINT, signal.default_int_handler)
            script, module = request.get("script"), request.get("module")
            # first on the path, as python puts it: the script's folder, or (-m) the cwd
            sys.path[0] = str(Path(script).resolve().parent) if script else os.getcwd()
            sys.argv = [script or "-m", *request["args"]]  # (run_module sets -m's argv[0])
        except BaseException:
            traceback.print_exc()
            os._exit(1)
        os._exit(run(script, module))


def run(script: str | None, module: str | None) -> int:
    """``script`` as ``python SCRIPT`` runs it (``module`` as ``python -m MODULE``), then the
    interpreter's shutdown: its exit status."""
    try:
        if script is not None:
            runpy.run_path(script, run_name="__main__")
        else:
            runpy.run_module(str(module), run_name="__main__", alter_sys=True)
        code = 0
    except SystemExit as done:
        code = exit_code(done)
    except BaseException as error:
        sys.excepthook(type(error), error, error.__traceback__)
        code = -signal.SIGINT if isinstance(error, KeyboardInterrupt) else 1
    return finish(code)


def main() -> None:
    control = socket.socket(fileno=int(sys.argv[1]))
    for name in PRELOAD if sys.argv[3:] != ["bare"] else ():
        __import__(name)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    listener.bind(sys.argv[2])
    listener.listen(16)
    control.send(json.dumps({"threads": threads()}).encode())
    try:
        Zygote(control, listener).serve()
    finally:  # its folder (the socket, its log): its client's, gone with it
        shutil.rmtree(Path(sys.argv[2]).parent, ignore_errors=True)


if __name__ == "__main__":
    main()
