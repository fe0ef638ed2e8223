"""A ``rollchat`` for the shell commands a test runs (the docs pages' console blocks): a small
script first on PATH hands each call (its argv, cwd, environment, umask and its own stdin,
stdout and stderr) to this pytest worker's fork server (tests/forkserver.py) through a relay
thread here, and ends as the forked child ended. When the server cannot take a call (off,
failed, or an environment that differs in what is read at start) the script runs the real
``rollchat`` in its place, as the fork server's other callers do."""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import shutil
import socket
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

from tests import forkserver

# The script (standard library only, no site: it starts in a few milliseconds). It waits for
# "started" or "real" (run the real one instead: nothing was started), then for the end.
SHIM = '''#!{python} -IS
import json, os, signal, socket, sys
real = {real!r}
umask = [int(line.split()[1], 8) for line in open("/proc/self/status")
         if line.startswith("Umask:")][0]
try:
    relay = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    relay.connect({path!r})
    request = {{"args": sys.argv[1:], "cwd": os.getcwd(), "env": dict(os.environ),
               "umask": umask}}
    socket.send_fds(relay, [json.dumps(request).encode()], [0, 1, 2])
    answer = json.loads(relay.recv(1 << 16) or b"{{}}")
except OSError:
    answer = {{}}
if "started" not in answer:
    os.execv(real, [real, *sys.argv[1:]])
ended = json.loads(relay.recv(1 << 16) or b"{{}}")
if "code" not in ended:
    print("rollchat (tests/forkrelay.py): the fork server ended during the call",
          file=sys.stderr)
    sys.exit(1)
code = ended["code"]
if code < 0:  # ended by a signal: so is this script, as the shell would see the real one
    signal.signal(-code, signal.SIG_DFL)
    os.kill(os.getpid(), -code)
sys.exit(code)
'''


@contextlib.contextmanager
def rollchat_on_path(make_env: Callable[[Path], dict[str, str]]) -> Iterator[Path]:
    """A directory holding the ``rollchat`` script (to put first on PATH) while the block runs;
    ``make_env(home)``: the environment to start the fork server with, if it is not running."""
    where = Path(tempfile.mkdtemp(prefix="rollchat-relay-"))
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    stop_r, stop_w = os.pipe()
    relay = threading.Thread(target=_serve, args=(listener, stop_r, make_env), daemon=True,
                             name="forkrelay")
    try:
        listener.bind(str(where / "socket"))
        listener.listen(8)
        real = Path(sys.executable).with_name("rollchat")
        script = where / "rollchat"
        script.write_text(SHIM.format(python=sys.executable, real=str(real),
                                      path=str(where / "socket")), encoding="utf-8")
        script.chmod(0o755)
        relay.start()
        yield where
    finally:
        os.write(stop_w, b"x")
        relay.join(forkserver.REPLY_DEADLINE)
        for fd in (stop_r, stop_w):
            os.close(fd)
        listener.close()
        shutil.rmtree(where, ignore_errors=True)


def _serve(listener: socket.socket, stop: int,
           make_env: Callable[[Path], dict[str, str]]) -> None:
    """Take the script's calls until ``stop`` is written; one at a time (a page's commands run
    one after another; a pipeline of two ``rollchat`` would wait: each gets a thread)."""
    calls: list[threading.Thread] = []
    with selectors.DefaultSelector() as selector:
        selector.register(listener, selectors.EVENT_READ)
        selector.register(stop, selectors.EVENT_READ)
        while True:
            ready = {key.fileobj for key, _ in selector.select()}
            if stop in ready:
                break
            conn, _ = listener.accept()
            call = threading.Thread(target=_call, args=(conn, stop, make_env), daemon=True)
            call.start()
            calls.append(call)
    for call in calls:
        call.join(forkserver.REPLY_DEADLINE)


def _call(conn: socket.socket, stop: int, make_env: Callable[[Path], dict[str, str]]) -> None:
    """One call of the script: forked by the server with the script's streams, its end told
    back; "real" when the server cannot take it. The script gone, or the relay stopped (the
    test ended): the child is killed."""
    with conn:
        message, fds, _, _ = socket.recv_fds(conn, 1 << 20, 3)
        if len(fds) != 3:  # (not the script)
            for fd in fds:
                os.close(fd)
            return
        request = json.loads(message)
        # (the streams are the launch's to close, whatever happens)
        started = forkserver.launch(tuple(request["args"]), Path(request["cwd"]),
                                    request["env"], make_env, (fds[0], fds[1], fds[2]),
                                    umask=request["umask"])
        if started is None:
            with contextlib.suppress(OSError):
                conn.send(json.dumps({"real": True}).encode())
            return
        mine, pid = started
        with mine:
            conn.send(json.dumps({"started": pid}).encode())
            with selectors.DefaultSelector() as selector:
                selector.register(mine, selectors.EVENT_READ)
                selector.register(conn, selectors.EVENT_READ)
                selector.register(stop, selectors.EVENT_READ)
                ready = {key.fileobj for key, _ in selector.select()}
            if mine not in ready:  # the script is gone (killed): so is the child (mine closed)
                return
            ended = forkserver.ended(mine)
            if ended is not None:
                with contextlib.suppress(OSError):
                    conn.send(json.dumps({"code": ended}).encode())
