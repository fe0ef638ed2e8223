"""SessionStore: sessions kept as files, one ``<id>.md`` each in the sessions directory; this
module also exports InMemoryStore (storage.in_memory), the Store protocol (storage.api) and the
listing API, so callers import one place."""

# A session is written by one process only: the one holding its lock (storage.locks).
# New files are hard-linked from a complete temporary file (O_EXCL ids); appends use O_APPEND +
# fsync and never re-read; finalize rewrites through ``.<name>.tmp-<pid>-<hex>``, fsync,
# os.replace and a directory fsync. Listing goes through the sessions index (storage.index),
# which reads only the files that are new or changed.

from __future__ import annotations

import contextlib
import os
import re
import secrets
import stat
import time
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import BinaryIO

from rollchat.domain import SessionHeader, Summary, Transcript, Turn
from rollchat.errors import StoreError, TranscriptError
from rollchat.storage.api import LiveSession, Store
from rollchat.storage.images import delete_images, save_images
from rollchat.storage.in_memory import InMemorySession, InMemoryStore
from rollchat.storage.index import SessionIndex
from rollchat.storage.listing import (
    DEFAULT_LIMIT,
    SESSION_ID_RE,
    Hit,
    Listing,
    Page,
    SessionInfo,
    check_id,
    new_ids,
    resolve,
    slug,
)
from rollchat.storage.locks import (
    BRIEF_WAIT,
    SessionBusyError,
    SessionLocks,
    busy_message,
    pid_alive,
)
from rollchat.storage.session_file import NOFOLLOW, FileSession, atomic_write, fsync_dir, write_all
from rollchat.storage.transcript import (
    decode,
    parse_head,
    parse_lenient,
    render_finalized,
    render_header,
    render_linked,
    render_resummarized,
    render_titled,
    render_turn,
    tail_summary,
)
from rollchat.text.normalize import encode

__all__ = [
    "MAX_FILE_BYTES",
    "FileSession",
    "InMemorySession",
    "InMemoryStore",
    "Listing",
    "LiveSession",
    "SessionBusyError",
    "SessionInfo",
    "SessionStore",
    "Store",
    "resolve",
    "slug",
]

# the largest file ``rollchat import`` reads. A session file is read whatever its size: what
# rollchat writes, it reads (two 35 MB tool results make a 70 MB transcript, and its turns
# have no bound), so ``show``, ``export``, ``audit``, ``compact``, resume and the archive tool
# never refuse one; the listing reads its head and tail only.
MAX_FILE_BYTES = 64 * 1024 * 1024
TEMP_MAX_AGE = 30.0
_TMP_RE = re.compile(r"\..+\.md\.tmp-([0-9]+)-[0-9a-f]+")


class SessionStore:
    """The sessions directory ``root``: one ``<session_id>.md`` per session."""

    def __init__(self, root: Path, *, max_read_bytes: int | None = None) -> None:
        self.root = Path(root)
        self.location = str(self.root)  # for the banner
        self.max_read_bytes = max_read_bytes
        self.locks = SessionLocks(self.root)
        self.index = SessionIndex(self.root)  # listing and search; updated after each save
        self._ensured = False

    def ensure(self) -> None:
        """Create the directory (0700, with a ``.gitignore``) and clean stale temporary files."""
        root = self.root
        try:
            if root.exists() and not root.is_dir():
                raise StoreError(f"sessions directory {root} exists and is not a directory")
            if not root.exists():
                root.mkdir(parents=True, mode=0o700, exist_ok=True)
                os.chmod(root, 0o700)
                self._write_gitignore()
        except OSError as e:
            raise StoreError(f"cannot create sessions directory {root}: {e.strerror}") from None
        if not os.access(root, os.W_OK | os.X_OK):
            raise StoreError(f"sessions directory {root} is not writable")
        self._clean_temp_files()
        self._ensured = True

    def _write_gitignore(self) -> None:
        with contextlib.suppress(FileExistsError):
            fd = os.open(self.root / ".gitignore", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            try:
                write_all(fd, b"# rollchat transcripts are private: never commit them\n*\n")
            except OSError:  # disk full: leave no directory whose .gitignore ignores nothing
                with contextlib.suppress(OSError):
                    os.unlink(self.root / ".gitignore")
                    os.rmdir(self.root)
                raise
            finally:
                os.close(fd)

    def _clean_temp_files(self) -> None:
        now = time.time()
        with contextlib.suppress(OSError), os.scandir(self.root) as it:
            for entry in it:
                m = _TMP_RE.fullmatch(entry.name)
                if m is None or not entry.is_file(follow_symlinks=False):
                    continue
                with contextlib.suppress(OSError):
                    age = now - entry.stat(follow_symlinks=False).st_mtime
                    if age > TEMP_MAX_AGE or not pid_alive(int(m[1])):
                        os.unlink(entry.path)

    def path_for(self, session_id: str) -> Path:
        """The file of ``session_id``; StoreError for anything that is not an id."""
        return self.root / f"{check_id(session_id)}.md"

    def has_file(self, file_name: str) -> bool:
        """Whether ``file_name`` (a link from a header: ``<id>.md``) is in the directory."""
        return (file_name.endswith(".md") and SESSION_ID_RE.fullmatch(file_name[:-3]) is not None
                and (self.root / file_name).exists())

    # ------------------------------------------------------------ writing

    def new_session(self, *, agent_key: str, agent: str, agent_path: str, model: str,
                    provider: str, now: datetime, resumed_from: str | None = None,
                    previous_session: str | None = None, forked: bool = False,
                    tools: tuple[str, ...] | None = None, handed_from: str | None = None,
                    imported_from: str | None = None,
                    cost: float | None = None,
                    title: str | None = None, entries: Sequence[Turn] = (),
                    pending: Turn | None = None) -> FileSession:
        """Create ``{slug}_{YYYYMMDD_HHMMSS}_{hex}.md`` (O_EXCL, 0600) with its header and
        ``entries`` (its first turns: no kill leaves a header without them), then ``pending``
        (the turn in progress, as ``FileSession.write_pending`` writes it: the next turn
        replaces it), fsynced, locked before it exists: from its first byte it is this
        process's to write."""
        if not self._ensured:
            self.ensure()
        for sid in new_ids(agent_key, now):
            path = self.root / f"{sid}.md"
            header = SessionHeader(sid, now, agent, agent_path, model, provider,
                                   resumed_from, previous_session, forked=forked,
                                   tools=tools, handed_from=handed_from,
                                   imported_from=imported_from, cost=cost, title=title)
            if not self.locks.acquire(sid):
                continue
            made, first = False, b""
            try:  # (never another's: its images would go beside it)
                first = self._first(header, entries)
                later = b"" if pending is None else self._first(None, [pending], header)
                made = not path.exists() and self._create(path, first + later)
            finally:
                if not made:
                    self.locks.release(sid)
                    if not path.exists():
                        delete_images(self.root, sid)
            if made:
                self.index.saved(path.name)
                return FileSession(path, header, self.locks, self.index.saved,
                                   pending_at=None if pending is None else len(first))
        raise StoreError(f"could not find a free session id in {self.root}")

    def _first(self, header: SessionHeader | None, entries: Sequence[Turn],
               of: SessionHeader | None = None) -> bytes:
        """A new file's bytes: its ``header`` (None: none), then its first entries (their
        images saved beside it first, as ``FileSession.append_turn`` saves them) of the
        session ``of`` (default: ``header``'s)."""
        of = of or header
        assert of is not None
        turns = [save_images(t, self.root, of.session_id) for t in entries]
        return encode((render_header(header) if header is not None else "") +
                      "".join(render_turn(t, of.agent) for t in turns))

    def _create(self, path: Path, data: bytes) -> bool:
        """Write ``data`` to a temporary file, then hard-link it as ``path`` (refused if the id
        is taken: False): a crash never leaves an empty or half-written session file."""
        tmp = path.parent / f".{path.name}.tmp-{os.getpid()}-{secrets.token_hex(4)}"
        if not self._create_excl(tmp, data):
            return False
        try:
            os.link(tmp, path)
        except FileExistsError:
            return False
        except OSError:  # no hard links on this filesystem: create the file in place
            if not self._create_excl(path, data):
                return False
        finally:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        fsync_dir(self.root)
        return True

    def _create_excl(self, path: Path, data: bytes) -> bool:
        """Create ``path`` (O_EXCL, 0600) holding ``data``, fsynced; False if it exists."""
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | NOFOLLOW, 0o600)
        except FileExistsError:
            return False
        except OSError as e:
            raise StoreError(f"cannot create a session file in {self.root}: "
                             f"{e.strerror}") from None
        try:
            try:
                os.fchmod(fd, 0o600)
                write_all(fd, data)
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError as e:
            with contextlib.suppress(OSError):
                os.unlink(path)
            raise StoreError(f"cannot write session file {path}: {e.strerror}") from None
        return True

    def finalize(self, session_id: str, summary: Summary, *, total_queries: int,
                 total_tokens: int, context_tokens: int | None = None,
                 cost: float | None = None) -> None:
        """Atomically rewrite the file: header totals updated, summary block at the end."""
        self._rewrite(session_id, lambda text: render_finalized(
            text, summary, total_queries=total_queries, total_tokens=total_tokens,
            context_tokens=context_tokens, cost=cost))

    def set_title(self, session_id: str, title: str) -> None:
        """Atomically set the session's header Title (``rollchat rename``); SessionBusyError
        when another process has it open."""
        self._rewrite(session_id, lambda text: render_titled(text, title))

    def link_child(self, session_id: str, child_id: str) -> None:
        """Atomically add ``child_id`` to the session's ``Continued In`` header line."""
        self._rewrite(session_id, lambda text: render_linked(text, check_id(child_id)))

    def replace_summary(self, session_id: str, summary: Summary) -> None:
        """Atomically replace the session's summary block; the rest stays byte for byte."""
        self._rewrite(session_id, lambda text: render_resummarized(text, summary))

    def snapshot(self, session_id: str) -> bytes:
        """The session file's exact bytes (to put back with ``reopen``)."""
        path = self.path_for(session_id)
        with os.fdopen(self._open(path, follow=False), "rb") as f:
            try:
                return f.read()
            except OSError as e:
                raise StoreError(f"cannot read {path}: {e.strerror}") from None

    def reopen(self, session_id: str, data: bytes) -> FileSession:
        """Put ``data`` (a ``snapshot`` of a live session) back as the session's file,
        atomically, and hold the session again to write on (undoing a compaction);
        SessionBusyError when another process has it open meanwhile."""
        path = self.path_for(session_id)
        if not self.locks.acquire(session_id, BRIEF_WAIT):
            raise SessionBusyError(f"{busy_message(session_id)}; it was not changed")
        try:
            header = parse_head(decode(data, binary_check=False)).header
            atomic_write(path, data)
        except BaseException:
            self.locks.release(session_id)
            raise
        self.index.saved(path.name)
        live = FileSession(path, header, self.locks, self.index.saved)
        live.check_totals(data)
        return live

    def delete(self, session_id: str, *, written_ns: int | None = None) -> None:
        """Remove the session's file and its lock file (``rollchat prune``); SessionBusyError
        when another process has it open; StoreError, and nothing deleted, when ``written_ns``
        is given and the file was written since (its mtime is another)."""
        path = self.path_for(session_id)
        with self.locks.claim(session_id):
            try:
                if (written_ns is not None
                        and os.stat(path, follow_symlinks=False).st_mtime_ns != written_ns):
                    raise StoreError("written since it was listed")
                os.unlink(path)
                delete_images(self.root, session_id)
            except FileNotFoundError:
                pass
            except OSError as e:
                raise StoreError(f"cannot delete {path}: {e.strerror}") from None
            fsync_dir(self.root)
        self.locks.discard(session_id)
        self.index.saved(path.name)  # forgets it

    def open_elsewhere(self, session_id: str) -> bool:
        """Whether another process has the session open (and so is the only one to write it)."""
        return self.locks.held_elsewhere(check_id(session_id))

    def _rewrite(self, session_id: str, change: Callable[[str], str]) -> None:
        """Rewrite the file as ``change`` makes it, holding its lock: SessionBusyError when
        another process has it open (this process's own live session nests)."""
        path = self.path_for(session_id)
        with self.locks.claim(session_id):
            text = self._read_text(path, follow=False, limit=None)
            try:
                new = change(text)
            except TranscriptError as e:
                raise StoreError(f"{path.name} {e}") from None
            atomic_write(path, encode(new))
        self.index.saved(path.name)

    # ------------------------------------------------------------ reading

    def _open(self, path: Path, *, follow: bool) -> int:
        """A descriptor of ``path``, a regular file. ``follow``: a symlink is followed to a file
        inside the directory only (checked on the resolved path, then opened with O_NOFOLLOW:
        a link swapped in after the check fails); else any symlink is refused."""
        target = path
        if follow:
            try:
                target = path.resolve()
            except RuntimeError:  # a symlink loop (Python < 3.13)
                raise StoreError(f"{path.name} is a symlink loop; refusing to read it") from None
            if not target.is_relative_to(self.root.resolve()):
                raise StoreError(f"{path.name} is a symlink pointing outside the sessions "
                                 "directory; refusing to read it")
        try:
            fd = os.open(target, os.O_RDONLY | NOFOLLOW | getattr(os, "O_NONBLOCK", 0))
        except FileNotFoundError:
            raise StoreError(f"no session file {path.name} in {self.root}") from None
        except OSError as e:
            raise StoreError(f"cannot read {path}: {e.strerror}") from None
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise StoreError(f"{path.name} is not a regular file")
        return fd

    def _read_text(self, path: Path, *, follow: bool, limit: int | None) -> str:
        """The whole file as text (strict UTF-8); ``limit``: refuse a larger file."""
        data = self._read_data(path, follow=follow, limit=limit)
        try:
            return decode(data, binary_check=False)
        except TranscriptError as e:
            raise StoreError(f"{path.name}: {e}") from None

    def _read_data(self, path: Path, *, follow: bool, limit: int | None) -> bytes:
        """The whole file's bytes; ``limit``: refuse a larger file."""
        with os.fdopen(self._open(path, follow=follow), "rb") as f:
            size = os.fstat(f.fileno()).st_size
            try:
                data = f.read() if limit is None else f.read(limit + 1)
            except OSError as e:
                raise StoreError(f"cannot read {path}: {e.strerror}") from None
        if limit is not None and max(size, len(data)) > limit:
            raise StoreError(f"{path.name} is too large to read ({max(size, len(data))} "
                             f"bytes, limit {limit})")
        return data

    def list_sessions(self, exclude: str | None = None) -> Listing:
        """Sessions most recent first (numbered 1..), and files that are not sessions, through
        the index (which re-reads only the files changed since it last saw them)."""
        return self.index.listing(exclude)

    def page(self, limit: int | None = DEFAULT_LIMIT, exclude: str | None = None) -> Page:
        """The ``limit`` most recent sessions (None: all), numbered 1.., the total and the
        files that are not sessions, through the index (no file opened when it is fresh)."""
        return self.index.page(limit, exclude)

    def search(self, text: str, limit: int = DEFAULT_LIMIT) -> list[Hit]:
        """The sessions matching ``text``, best first, through the index's full-text search."""
        return self.index.search(text, limit)

    def imported(self, marker: str) -> list[SessionInfo]:
        """The sessions whose Imported From holds ``marker`` (``rollchat import``'s digest)."""
        return self.index.imported(marker)

    def resolve(self, ref: str, current: str | None = None) -> SessionInfo:
        """The session ``ref`` names, through the index (no full listing read)."""
        return self.index.resolve(ref, current)

    def lineage(self, sessions: Sequence[SessionInfo]) -> list[SessionInfo]:
        """``sessions`` and the sessions they continue, through the index."""
        return self.index.lineage(sessions)

    def load_summary(self, info: SessionInfo) -> Summary | None:
        """The session's summary from the file's tail, or None (none, or corrupted markers)."""
        fd = self._open(self.path_for(info.session_id), follow=False)
        try:
            return tail_summary(lambda at, n: os.pread(fd, n, at), os.fstat(fd).st_size)
        except TranscriptError as e:
            raise StoreError(f"{info.file_name}: {e}") from None
        finally:
            os.close(fd)

    def read_bytes(self, session_id: str) -> bytes:
        """The session file's bytes as they are, read as ``load_transcript`` reads them (a
        regular file inside the directory; at most ``max_read_bytes`` when the store was given
        a limit), without parsing."""
        return self._read_data(self.path_for(session_id), follow=True, limit=self.max_read_bytes)

    def open_file(self, session_id: str) -> BinaryIO:
        """The session file opened for reading as ``load_transcript`` reads it (a regular file
        inside the directory, at most ``max_read_bytes`` when the store was given a limit), to
        be read a line at a time (``transcript.stream``)."""
        path = self.path_for(session_id)
        f = os.fdopen(self._open(path, follow=True), "rb")
        size = os.fstat(f.fileno()).st_size
        if self.max_read_bytes is not None and size > self.max_read_bytes:
            f.close()
            raise StoreError(f"{path.name} is too large to read ({size} bytes, limit "
                             f"{self.max_read_bytes})")
        return f

    def read_text(self, session_id: str) -> str:
        """The session's file as it is, read as ``load_transcript`` reads it."""
        return self._read_text(self.path_for(session_id), follow=True, limit=self.max_read_bytes)

    def load_transcript(self, session_id: str) -> Transcript:
        """The whole session, parsed; a corrupted summary block is dropped (the turns remain).
        Only a regular file inside the directory is read (at most ``max_read_bytes`` when
        the store was given a limit: none by default, see MAX_FILE_BYTES)."""
        path = self.path_for(session_id)
        text = self.read_text(session_id)
        try:
            return parse_lenient(text)
        except TranscriptError as e:
            raise TranscriptError(f"{path.name}: {e}") from None
