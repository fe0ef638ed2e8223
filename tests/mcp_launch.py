"""A Python MCP test server as rollchat starts it (a command line), without the seconds of the
SDK's import: ``python -I -S tests/mcp_launch.py SOCKET SCRIPT ARGS`` (or ``SOCKET -m MODULE
ARGS``) hands its stdin, stdout, stderr, cwd, environment, umask and argv to the zygote
listening on SOCKET (tests/mcp_zygote.py), which forks ``python SCRIPT ARGS`` (``python -m
MODULE ARGS``) from its preloaded SDK. This process stands for the server: the signals it gets
go to the server, and it ends as the server ended (its exit status, or the same signal);
killed, the server is killed too. When the zygote cannot take it, this process becomes the
real ``python SCRIPT ARGS`` (exec).
Standard library only, no site: it starts in milliseconds."""

import contextlib
import json
import os
import signal
import socket
import sys

REPLY_SECONDS = 60.0  # for the zygote's fork (a loaded machine: seconds)
FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1,
             signal.SIGUSR2)


def main() -> None:
    path, command = sys.argv[1], sys.argv[2:]  # (command: SCRIPT ARGS or -m MODULE ARGS)
    with open("/proc/self/status") as status:
        umask = next(int(line.split()[1], 8) for line in status if line.startswith("Umask:"))
    request = {"args": command[2:] if command[0] == "-m" else command[1:], "cwd": os.getcwd(),
               "env": dict(os.environ), "umask": umask,
               **({"module": command[1]} if command[0] == "-m" else {"script": command[0]})}
    zygote = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    early: list[int] = []  # signals got before the server was asked for (passed on after)
    asked = False

    def forward(signum: int, frame: object) -> None:
        if not asked:
            early.append(signum)
            return
        with contextlib.suppress(OSError):  # (the zygote reads it after the request)
            zygote.send(f"signal {signum}".encode())

    for signum in FORWARDED:  # first: a signal sent once this process runs reaches the server
        signal.signal(signum, forward)
    try:
        zygote.settimeout(REPLY_SECONDS)  # (then: the real one; the zygote kills its fork)
        zygote.connect(path)
        socket.send_fds(zygote, [json.dumps(request).encode()], [0, 1, 2])
        asked = True
        for signum in early:
            forward(signum, None)
        started = json.loads(zygote.recv(1 << 16) or b"{}")
        zygote.settimeout(None)
    except OSError:
        started = {}
    if "pid" not in started:  # the real server in this process's place (as it, signalled)
        for signum in FORWARDED:
            signal.signal(signum, signal.SIG_DFL)
        if early:
            os.kill(os.getpid(), early[0])
        os.execv(sys.executable, [sys.executable, *command])
    ended = json.loads(zygote.recv(1 << 16) or b"{}")
    code = ended.get("code", -signal.SIGKILL)  # (the zygote gone: so is the server)
    if code < 0:  # ended by a signal: so does this process
        if -code in FORWARDED:
            signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    sys.exit(code)


if __name__ == "__main__":
    main()
