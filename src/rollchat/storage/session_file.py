"""A session file being written by this process: each completed turn appended (O_APPEND,
fsync), the turn in progress replaced through a temporary file and a rename, the header's totals
refreshed in place one sector at a time; and the low-level write helpers the store shares."""

# Nothing here overwrites bytes a reader may need: a SIGKILL can stop a large write(2) part-way
# (between pages), so a rewrite in place could leave half a new block over half an old one.
# Appends only add after the last whole block (the parser ignores a torn last block); any
# replacement goes through ``replace_tail`` (a temporary file, fsync, rename, directory fsync);
# the totals are fixed-width lines, each rewritten by one write inside one 512-byte sector
# (what neither a kill, which stops a write between pages, nor a device tears).

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import weakref
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from rollchat.domain import SessionHeader, Turn
from rollchat.errors import StoreError, TranscriptError
from rollchat.interrupts import sigint_deferred
from rollchat.storage.images import save_images
from rollchat.storage.listing import NOFOLLOW as NOFOLLOW  # (its importers read it here)
from rollchat.storage.locks import SessionLocks
from rollchat.storage.transcript import (
    decode,
    render_header,
    render_titled,
    render_totals,
    render_turn,
    totals_span,
)
from rollchat.text.normalize import encode

SECTOR = 512  # the unit a device writes whole


# ---------------------------------------------------------------- files


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    except OSError:  # some filesystems cannot fsync a directory; the rename is still done
        pass
    finally:
        os.close(fd)


def _no_lock(session_id: str) -> None:
    """What closing a FileSession made without a lock does."""


def atomic_write(path: Path, data: bytes) -> None:
    """Replace ``path`` by a file holding ``data``: a temporary file beside it, fsync, rename,
    directory fsync. StoreError (the file left unchanged) when it cannot."""
    replace_tail(path, 0, data)


def replace_tail(path: Path, keep: int, data: bytes) -> None:
    """Replace ``path`` by a file holding its first ``keep`` bytes (copied in the kernel) and
    then ``data``, through a temporary file, fsync, rename and directory fsync: a kill at any
    point leaves the old file or the new one. StoreError (the file left unchanged) when it
    cannot. The new file is a new inode: the session locks (their own files) and the index
    (size and mtime) are unaffected; a reader holding the old one reads it whole."""
    tmp = path.parent / f".{path.name}.tmp-{os.getpid()}-{secrets.token_hex(4)}"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | NOFOLLOW, 0o600)
        try:
            if keep:
                _copy_head(path, fd, keep)
            write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
        fsync_dir(path.parent)
    except BaseException as e:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(e, OSError):
            raise StoreError(f"cannot rewrite {path} (left unchanged): "
                             f"{e.strerror or e}") from None
        raise


def _copy_head(path: Path, out: int, size: int) -> None:
    """Copy the first ``size`` bytes of ``path`` to ``out`` (at its offset 0)."""
    src = os.open(path, os.O_RDONLY | NOFOLLOW)
    try:
        done = 0
        copy = getattr(os, "copy_file_range", None)
        while copy is not None and done < size:
            try:
                n = copy(src, out, size - done, done, done)
            except OSError:  # not across these filesystems: copy through memory
                break
            if n == 0:
                raise OSError(errno.EIO, "the session file is shorter than it was")
            done += n
        while done < size:
            chunk = os.pread(src, min(size - done, 1 << 20), done)
            if not chunk:
                raise OSError(errno.EIO, "the session file is shorter than it was")
            done += os.pwrite(out, chunk, done)
        os.lseek(out, size, os.SEEK_SET)
    finally:
        os.close(src)


def _not_indexed(file_name: str, *, text: bool = True) -> None:
    """What a FileSession made without an index does after a save."""


class FileSession:
    """A session file being written: each completed turn is appended and fsynced. ``locks``:
    where its lock is held, until ``close`` (or until this object is dropped). ``saved``: told
    the file name after each write (the sessions index; it never raises)."""

    def __init__(self, path: Path, header: SessionHeader,
                 locks: SessionLocks | None = None,
                 saved: Callable[..., None] = _not_indexed, *,
                 pending_at: int | None = None) -> None:
        self.path = path
        self._saved = saved
        self.header = header
        self.session_id = header.session_id
        self.file_name = path.name
        self._totals = _totals_in(render_header(header))  # as it was written
        self._pending_at = pending_at  # where the turn in progress was written
        self._release = weakref.finalize(self, locks.release if locks else _no_lock,
                                         self.session_id)

    def close(self) -> None:
        """Let go of the session: another process may write it from now on."""
        self._release()

    def check_totals(self, data: bytes) -> None:
        """The file holds ``data`` (put back by ``reopen``): find its totals there."""
        try:
            head = data[:data.index(b"\n---\n") + 1].decode("utf-8")
        except ValueError:
            self._totals = None
            return
        self._totals = _totals_in(head)

    def set_totals(self, queries: int, billed: int, context: int,
                   cost: float | None = None) -> None:
        """Refresh the header's totals in place (same length: see render_totals), so that the
        header of a live or crashed session tells the truth: each changed line by one write
        inside one sector, never torn; a line across a sector boundary keeps its old value.
        Best effort: the turns are what matters, and finalizing writes the totals again."""
        if self._totals is None:
            return
        start, old = self._totals
        new = encode(render_totals(queries, billed, context, cost))
        if len(new) != len(old) or new == old:
            return  # a number outgrew its width, or nothing changed
        with sigint_deferred(), contextlib.suppress(OSError):
            fd = os.open(self.path, os.O_WRONLY | NOFOLLOW)
            try:
                kept = _write_lines(fd, start, old, new)
                os.fsync(fd)
            finally:
                os.close(fd)
            self._totals = (start, kept)
            self._saved(self.file_name, text=False)

    def set_title(self, title: str) -> None:
        """Set the header's Title (an atomic rewrite of the file, between turns)."""
        with sigint_deferred():
            try:
                with open(self.path, "rb") as f:
                    text = decode(f.read(), binary_check=False)
                new = encode(render_titled(text, title))
            except (OSError, TranscriptError) as e:
                raise StoreError(f"cannot set the title of {self.path.name}: "
                                 f"{getattr(e, 'strerror', None) or e}") from None
            atomic_write(self.path, new)
            self.header = replace(self.header, title=title)
            self.check_totals(new)
        self._saved(self.file_name)

    def append_turn(self, turn: Turn, agent_name: str) -> None:
        """Append one turn block (O_APPEND + fsync); never reads or rewrites the file, unless it
        replaces the turn in progress (see write_pending). A Ctrl-C or an ending signal
        arriving meanwhile waits until the block is written. Its images are saved first,
        beside the file (storage/images.py)."""
        turn = save_images(turn, self.path.parent, self.session_id)
        data = encode(render_turn(turn, agent_name))
        with sigint_deferred():
            if self._pending_at is not None:  # the finished turn replaces its provisional block
                replace_tail(self.path, self._pending_at, data)
                self._pending_at = None
            else:
                self._append(data)
        self._saved(self.file_name)

    def write_pending(self, turn: Turn, agent_name: str) -> None:
        """Write the turn in progress (marked interrupted: what a crash now would leave) as a
        provisional block; ``append_turn`` replaces it at last. The first is appended, each
        later one replaces it through a temporary file and a rename (``replace_tail``): a
        killed process leaves the previous block or the new one, whole (see
        session.checkpoint)."""
        turn = save_images(turn, self.path.parent, self.session_id)
        data = encode(render_turn(turn, agent_name))
        with sigint_deferred():
            if self._pending_at is None:
                try:
                    at = self.path.stat().st_size
                except OSError as e:
                    raise StoreError(f"cannot read {self.path}: {e.strerror}") from None
                self._append(data)
                self._pending_at = at
            else:
                replace_tail(self.path, self._pending_at, data)

    def _append(self, data: bytes) -> None:
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | NOFOLLOW)
        except OSError as e:
            raise StoreError(f"cannot open {self.path} to save the turn: {e.strerror}") from None
        try:
            size = os.fstat(fd).st_size
            try:
                write_all(fd, data)
                os.fsync(fd)
            except OSError as e:
                with contextlib.suppress(OSError):  # never leave half a block behind
                    os.ftruncate(fd, size)
                raise StoreError(f"cannot save the turn to {self.path}: {e.strerror}") from None
        finally:
            os.close(fd)


def _totals_in(head: str) -> tuple[int, bytes] | None:
    """The byte offset and bytes of the totals in a file's ``head`` (its header's text)."""
    span = totals_span(head)
    if span is None:
        return None
    return len(encode(head[:span[0]])), encode(head[span[0]:span[1]])


def _write_lines(fd: int, start: int, old: bytes, new: bytes) -> bytes:
    """Write each line of ``new`` that differs from ``old`` (the same length, at ``start`` in
    the file) by one pwrite inside one sector; what the file holds there afterwards."""
    kept = bytearray(old)
    at = 0
    for line in new.split(b"\n"):
        end = at + len(line)
        begin = start + at
        one_sector = begin // SECTOR == (begin + len(line) - 1) // SECTOR
        if line != old[at:end] and one_sector and os.pwrite(fd, line, begin) == len(line):
            kept[at:end] = line
        at = end + 1
    return bytes(kept)
