"""A command rollchat runs to its end (a hook): its output read with a bound as it comes (a head
and a tail kept, the rest counted), and at its timeout everything it started ended, even what
left its process group (setsid), found by a mark in its environment and, on Linux, kept as
rollchat's descendant by the child subreaper flag while it runs."""

from __future__ import annotations

import contextlib
import ctypes
import os
import secrets
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

MARK = "ROLLCHAT_RUN"  # in a child's environment: which run started it (inherited below it)
TAIL_CHARS = 2_000  # the end of a stream kept besides its head
_PR_SET_CHILD_SUBREAPER = 36  # linux/prctl.h
_subreaper = threading.Lock()  # one run at a time holds the flag (hooks run one at a time)


class Bounded:
    """A text stream read to its end keeping at most ``head`` characters of its start and
    ``tail`` of its end; ``dropped`` counts the characters between (never kept)."""

    def __init__(self, head: int, tail: int = TAIL_CHARS) -> None:
        self.head_limit, self.tail_limit = head, tail
        self.head, self.tail, self.dropped = "", "", 0

    def add(self, chunk: str) -> None:
        room = self.head_limit - len(self.head)
        if room > 0:
            self.head, chunk = self.head + chunk[:room], chunk[room:]
        if not chunk:
            return
        tail = self.tail + chunk
        if len(tail) > self.tail_limit:
            self.dropped += len(tail) - self.tail_limit
            tail = tail[-self.tail_limit:] if self.tail_limit else ""
        self.tail = tail

    @property
    def cut(self) -> bool:
        """Whether anything past the head came (the text is longer than ``head``)."""
        return bool(self.tail or self.dropped)

    def text(self) -> str:
        """The head, then (when more came) the count of what was dropped and the tail."""
        if not self.dropped:
            return self.head + self.tail
        return f"{self.head}\n[... {self.dropped:,} characters not kept ...]\n{self.tail}"

    def read(self, stream: object) -> None:
        """Read ``stream`` (a text file object) to its end."""
        with contextlib.suppress(OSError, ValueError):
            while chunk := stream.read(65536):  # type: ignore[attr-defined]
                self.add(chunk)


@dataclass(frozen=True)
class Finished:
    """How a run ended: its exit status (None when killed at its timeout) and its output."""

    returncode: int | None
    out: Bounded
    err: Bounded


def _set_subreaper(on: bool) -> bool:
    """Make this process the child subreaper (Linux): an orphan below it is re-parented here,
    not to init, so it stays findable. False where the platform has no such flag."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)  # the process's own symbols: libc's prctl
        return bool(libc.prctl(_PR_SET_CHILD_SUBREAPER, int(on), 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False


def _children(pid: int) -> set[int]:
    found: set[int] = set()
    for task in Path(f"/proc/{pid}/task").glob("*/children"):
        with contextlib.suppress(OSError, ValueError):
            found.update(int(p) for p in task.read_text().split())
    return found


def _marked(mark: str) -> set[int]:
    """The processes whose environment holds ``MARK=mark`` (Linux: /proc)."""
    wanted = f"{MARK}={mark}".encode()
    found: set[int] = set()
    for environ in Path("/proc").glob("[0-9]*/environ"):
        with contextlib.suppress(OSError, ValueError):
            if wanted in environ.read_bytes().split(b"\0"):
                found.add(int(environ.parent.name))
    return found


def _tree(roots: set[int]) -> set[int]:
    """``roots`` and all their descendants (Linux: /proc)."""
    seen, todo = set(), list(roots)
    while todo:
        pid = todo.pop()
        if pid not in seen and pid != os.getpid():
            seen.add(pid)
            todo.extend(_children(pid))
    return seen


def end_marked(mark: str, roots: frozenset[int] = frozenset(),
               spared: frozenset[int] = frozenset()) -> None:
    """SIGKILL every process carrying ``mark``, the ``roots``, and all their descendants
    (Linux: /proc; nothing elsewhere) until none is left, but ``spared``; the ones that are
    rollchat's children (an orphan re-parented to it) are reaped."""
    if not Path("/proc/self").exists():
        return
    for _ in range(50):  # a fork bomb races the kill: a few rounds, then give up
        pids = _tree(set(roots) | _marked(mark)) - spared
        if not pids:
            return
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        for pid in _children(os.getpid()) & pids:
            with contextlib.suppress(ChildProcessError, OSError):
                os.waitpid(pid, 0)


def mark_of(pid: int) -> str | None:
    """The ``MARK`` in the environment of the process ``pid`` (Linux), or None."""
    with contextlib.suppress(OSError):
        for entry in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0"):
            if entry.startswith(f"{MARK}=".encode()):
                return entry.split(b"=", 1)[1].decode("ascii", "replace")
    return None


def end_run(child: subprocess.Popen[str], mark: str) -> None:
    """SIGKILL the child's process group, its descendants and everything carrying ``mark``
    (see ``end_marked``), then reap the child."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(child.pid, signal.SIGKILL)
    end_marked(mark, frozenset({child.pid}), frozenset({child.pid}))
    with contextlib.suppress(subprocess.TimeoutExpired, ValueError, OSError):
        child.wait(timeout=5)


def run_bounded(command: str, *, stdin: str, timeout: float, cwd: Path,
                env: Mapping[str, str], head: int) -> Finished:
    """Run ``command`` through the shell in a session of its own with ``stdin``, reading its
    stdout and stderr as ``Bounded`` streams of ``head`` characters (plus a tail); at
    ``timeout`` seconds it and all it started are killed (``returncode`` None). OSError when
    it cannot start; on KeyboardInterrupt it is killed the same way, then the error goes on."""
    mark = secrets.token_hex(8)
    with _subreaper:
        reaping = _set_subreaper(True)
        try:
            return _run(command, stdin, timeout, cwd, {**env, MARK: mark}, head, mark)
        finally:
            if reaping:
                _set_subreaper(False)


def _run(command: str, stdin: str, timeout: float, cwd: Path, env: Mapping[str, str],
         head: int, mark: str) -> Finished:
    child = subprocess.Popen(command, shell=True, cwd=cwd, env=dict(env), stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             encoding="utf-8", errors="replace", start_new_session=True)
    out, err = Bounded(head), Bounded(head)
    readers = [threading.Thread(target=b.read, args=(s,), daemon=True, name="rollchat-child")
               for b, s in ((out, child.stdout), (err, child.stderr))]
    readers.append(threading.Thread(target=_feed, args=(child.stdin, stdin), daemon=True,
                                    name="rollchat-child-stdin"))
    for thread in readers:
        thread.start()
    deadline = time.monotonic() + timeout
    try:
        for thread in readers:  # the output ends when everything holding the pipes is gone
            thread.join(max(0.0, deadline - time.monotonic()))
        if any(t.is_alive() for t in readers):
            end_run(child, mark)
            returncode = None
        else:
            returncode = child.wait(max(0.1, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        end_run(child, mark)
        returncode = None
    except BaseException:  # Ctrl-C: nothing of it is left running
        end_run(child, mark)
        raise
    finally:
        for thread in readers:  # (the pipes closed when the last holder was killed)
            thread.join(1.0)
        for stream in (child.stdout, child.stderr):
            with contextlib.suppress(OSError):
                stream.close()  # type: ignore[union-attr]
    return Finished(returncode, out, err)


def _feed(pipe: object, text: str) -> None:
    """Write ``text`` to the child's stdin and close it (a child that does not read it is
    fine: the pipe breaks, nothing waits)."""
    with contextlib.suppress(OSError, ValueError):
        pipe.write(text)  # type: ignore[attr-defined]
    with contextlib.suppress(OSError, ValueError):
        pipe.close()  # type: ignore[attr-defined]
