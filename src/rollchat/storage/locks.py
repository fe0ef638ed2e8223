"""Per-session write locks: the process that writes a session file holds its lock, so no second
process ever writes the same file (it continues in a fork instead, see session.forks)."""

# The locks are ``flock`` locks (through filelock) on ``<sessions>/.locks/<id>.lock``: the kernel
# drops them when their process exits, crashes or is killed, so none is ever left stuck. A lock
# is held by a process, not by an object: holding it twice in one process nests.

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from rollchat.errors import StoreError

if TYPE_CHECKING:
    from filelock import BaseFileLock

LOCK_DIR = ".locks"
# How long a short write (a summary, a link to a child) waits for a session another process
# holds for a moment; a live session is held for as long as it is open, far longer.
BRIEF_WAIT = 2.0

_registry: dict[str, BaseFileLock] = {}  # one lock object per lock file, for the process
# reentrant: a SessionFile's weakref finalizer releases its lock, and the collector may run it
# on a thread that is inside this very lock (allocating a FileLock): a plain Lock deadlocks
_registry_lock = threading.RLock()
_inherited: list[BaseFileLock] = []  # a forked child's copies: kept, never used or released


def _forked() -> None:
    """In a forked child: its locks are the parent's. Releasing a copy would unlock the
    parent's (one open file shared), so they are set aside and the child makes its own."""
    global _registry_lock
    _inherited.extend(_registry.values())
    _registry.clear()
    _registry_lock = threading.RLock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forked)


class SessionBusyError(StoreError):
    """The session is open in another rollchat process: only that process writes it."""


def busy_message(session_id: str) -> str:
    return f"session {session_id} is open in another rollchat process"


class SessionLocks:
    """The locks of the sessions in one directory (kept in its ``.locks`` subdirectory)."""

    def __init__(self, sessions_dir: Path) -> None:
        self.dir = sessions_dir / LOCK_DIR

    def _lock(self, session_id: str) -> BaseFileLock:
        from filelock import FileLock

        path = str(self.dir / f"{session_id}.lock")
        with _registry_lock:
            lock = _registry.get(path)
            if lock is None:
                lock = _registry[path] = FileLock(path, mode=0o600, thread_local=False)
            return lock

    def acquire(self, session_id: str, wait: float = 0.0) -> bool:
        """Hold the session's lock (again, if this process holds it: nested); False when
        another process holds it for longer than ``wait`` seconds. StoreError when the lock
        file cannot be made."""
        from filelock import Timeout

        try:
            self.dir.mkdir(mode=0o700, exist_ok=True)
            self._lock(session_id).acquire(timeout=wait, poll_interval=0.02)
        except Timeout:
            return False
        except OSError as e:
            raise StoreError(f"cannot lock session {session_id} in {self.dir}: "
                             f"{e.strerror or e}") from None
        return True

    def release(self, session_id: str) -> None:
        """Give back one hold of the session's lock (the last one unlocks it)."""
        lock = self._lock(session_id)
        if lock.is_locked:
            lock.release()

    def discard(self, session_id: str) -> None:
        """Remove the lock file of a deleted session (best effort: a lock left behind is
        harmless)."""
        with contextlib.suppress(OSError):
            os.unlink(self.dir / f"{session_id}.lock")

    def held_elsewhere(self, session_id: str) -> bool:
        """Whether another process holds the session (for longer than a short write takes).
        A lock that cannot be made tells nothing: False (the writes that follow check)."""
        try:
            if not self.acquire(session_id, BRIEF_WAIT):
                return True
        except StoreError:
            return False
        self.release(session_id)
        return False

    @contextmanager
    def claim(self, session_id: str) -> Iterator[None]:
        """Hold the session for one write; SessionBusyError when another process has it open."""
        if not self.acquire(session_id, BRIEF_WAIT):
            raise SessionBusyError(f"{busy_message(session_id)}; only that process writes it")
        try:
            yield
        finally:
            self.release(session_id)


def pid_alive(pid: int) -> bool:
    """Whether a process ``pid`` exists (on this host)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True
    return True
