"""The sessions directory: ids, create, append a turn, finalize, list, load; atomic writes.
The text is the transcript package's (render, parse, bounded head/tail scans): files only here.

Appends use O_APPEND + fsync and never re-read the file; the one rewrite (finalize) goes through
a temporary file ``.<name>.tmp-<pid>-<hex>``, fsync, os.replace and a directory fsync.
Listing and summary loading read only each file's head and tail, whatever its size.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from rollchat.domain import SessionHeader, Summary, Transcript, Turn
from rollchat.errors import StoreError, TranscriptError
from rollchat.transcript import (
    Glance,
    decode,
    glance,
    parse_lenient,
    render_finalized,
    render_header,
    render_turn,
    tail_summary,
)

TEMP_MAX_AGE = 30.0
_ID_RE = re.compile(r"[A-Za-z0-9_-]+")
_TMP_RE = re.compile(r"\..+\.md\.tmp-([0-9]+)-[0-9a-f]+")
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


def slug(agent_key: str) -> str:
    """The agent key as it appears in session ids: lowercase letters, digits and ``_``."""
    return re.sub(r"[^a-z0-9]+", "_", agent_key.lower()).strip("_")[:40] or "session"


@dataclass(frozen=True)
class SessionInfo:
    """One listed session, from its head and tail only."""

    number: int
    session_id: str
    file_name: str
    path: Path
    agent: str
    agent_path: str
    model: str
    provider: str
    date: datetime
    queries: int
    tokens: int
    first_query_preview: str | None
    has_summary: bool
    resumed_from: str | None
    previous_session: str | None
    summary_problem: str | None = None
    # False when ``tokens`` is a lower bound: a session without a summary whose file is
    # longer than the tail window (its tokens are added up from the turn footers read).
    tokens_exact: bool = True


@dataclass(frozen=True)
class Listing:
    """Sessions numbered 1.. (most recent first) and the files that are not sessions."""

    sessions: list[SessionInfo] = field(default_factory=list)
    problems: list[tuple[str, str]] = field(default_factory=list)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    except OSError:  # some filesystems cannot fsync a directory; the rename is still done
        pass
    finally:
        os.close(fd)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True
    return True


class LiveSession:
    """A session being written: each completed turn is appended and fsynced."""

    def __init__(self, path: Path, header: SessionHeader) -> None:
        self.path = path
        self.header = header
        self.session_id = header.session_id
        self.file_name = path.name

    def append_turn(self, turn: Turn, agent_name: str) -> None:
        """Append one turn block (O_APPEND + fsync); never reads or rewrites the file."""
        data = render_turn(turn, agent_name).encode("utf-8", "surrogateescape")
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | _NOFOLLOW)
        except OSError as e:
            raise StoreError(f"cannot open {self.path} to save the turn: {e.strerror}") from None
        try:
            size = os.fstat(fd).st_size
            try:
                _write_all(fd, data)
                os.fsync(fd)
            except OSError as e:
                with contextlib.suppress(OSError):  # never leave half a block behind
                    os.ftruncate(fd, size)
                raise StoreError(f"cannot save the turn to {self.path}: {e.strerror}") from None
        finally:
            os.close(fd)


class SessionStore:
    """The sessions directory ``root``: one ``<session_id>.md`` per session."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self._ensured = False

    # ------------------------------------------------------------ directory

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
                _write_all(fd, b"# rollchat transcripts are private: never commit them\n*\n")
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
                    if age > TEMP_MAX_AGE or not _pid_alive(int(m[1])):
                        os.unlink(entry.path)

    def path_for(self, session_id: str) -> Path:
        """The file of ``session_id``; StoreError for anything that is not an id."""
        if not _ID_RE.fullmatch(session_id) or len(session_id) > 200:
            raise StoreError(f"invalid session id: {session_id[:80]!r}")
        return self.root / f"{session_id}.md"

    # ------------------------------------------------------------ writing

    def new_session(self, *, agent_key: str, agent: str, agent_path: str, model: str,
                    provider: str, now: datetime, resumed_from: str | None = None,
                    previous_session: str | None = None) -> LiveSession:
        """Create ``{slug}_{YYYYMMDD_HHMMSS}_{hex}.md`` (O_EXCL, 0600) with its header, fsynced."""
        if not self._ensured:
            self.ensure()
        base = f"{slug(agent_key)}_{now:%Y%m%d_%H%M%S}"
        for attempt in range(200):
            sid = f"{base}_{secrets.token_hex(2 if attempt < 20 else 4)}"
            path = self.root / f"{sid}.md"
            header = SessionHeader(sid, now, agent, agent_path, model, provider,
                                   resumed_from, previous_session)
            if self._create(path, render_header(header).encode("utf-8", "surrogateescape")):
                return LiveSession(path, header)
        raise StoreError(f"could not find a free session id in {self.root}")

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
        _fsync_dir(self.root)
        return True

    def _create_excl(self, path: Path, data: bytes) -> bool:
        """Create ``path`` (O_EXCL, 0600) holding ``data``, fsynced; False if it exists."""
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o600)
        except FileExistsError:
            return False
        except OSError as e:
            raise StoreError(f"cannot create a session file in {self.root}: "
                             f"{e.strerror}") from None
        try:
            try:
                os.fchmod(fd, 0o600)
                _write_all(fd, data)
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError as e:
            with contextlib.suppress(OSError):
                os.unlink(path)
            raise StoreError(f"cannot write session file {path}: {e.strerror}") from None
        return True

    def finalize(self, session_id: str, summary: Summary, total_queries: int,
                 total_tokens: int) -> None:
        """Atomically rewrite the file: header totals updated, summary block at the end."""
        path = self.path_for(session_id)
        text = self._read_text(path)
        try:
            new = render_finalized(text, summary, total_queries=total_queries,
                                   total_tokens=total_tokens)
        except TranscriptError as e:
            raise StoreError(f"{path.name} {e}") from None
        self._atomic_write(path, new.encode("utf-8", "surrogateescape"))

    def _atomic_write(self, path: Path, data: bytes) -> None:
        tmp = path.parent / f".{path.name}.tmp-{os.getpid()}-{secrets.token_hex(4)}"
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o600)
            try:
                _write_all(fd, data)
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(tmp, path)
            _fsync_dir(path.parent)
        except BaseException as e:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            if isinstance(e, OSError):
                raise StoreError(f"cannot rewrite {path} (left unchanged): "
                                 f"{e.strerror or e}") from None
            raise

    # ------------------------------------------------------------ reading

    def _read_text(self, path: Path) -> str:
        try:
            fd = os.open(path, os.O_RDONLY | _NOFOLLOW)
        except FileNotFoundError:
            raise StoreError(f"no session file {path.name} in {self.root}") from None
        except OSError as e:
            raise StoreError(f"cannot read {path}: {e.strerror}") from None
        try:
            with os.fdopen(fd, "rb") as f:
                data = f.read()
        except OSError as e:
            raise StoreError(f"cannot read {path}: {e.strerror}") from None
        try:
            return decode(data, binary_check=False)
        except TranscriptError as e:
            raise StoreError(f"{path.name}: {e}") from None

    def list_sessions(self, exclude: str | None = None) -> Listing:
        """Sessions most recent first (numbered 1..), and files that are not sessions."""
        found: list[SessionInfo] = []
        problems: list[tuple[str, str]] = []
        try:
            entries = sorted(os.scandir(self.root), key=lambda e: e.name)
        except FileNotFoundError:
            return Listing()
        except OSError as e:
            raise StoreError(f"cannot read sessions directory {self.root}: {e.strerror}") from None
        for entry in entries:
            name = entry.name
            if name.startswith(".") or not name.endswith(".md") or name[:-3] == exclude:
                continue
            try:
                found.append(_read_info(entry))
            except (StoreError, TranscriptError) as e:
                problems.append((name, str(e)))
        found.sort(key=lambda i: (i.date, i.session_id), reverse=True)
        numbered = [_renumber(info, n) for n, info in enumerate(found, 1)]
        return Listing(numbered, problems)

    def load_summary(self, info: SessionInfo) -> Summary | None:
        """The session's summary from the file's tail, or None (none, or corrupted markers)."""
        try:
            fd = os.open(info.path, os.O_RDONLY | _NOFOLLOW)
        except OSError as e:
            raise StoreError(f"cannot read {info.file_name}: {e.strerror}") from None
        try:
            return tail_summary(lambda at, n: os.pread(fd, n, at), os.fstat(fd).st_size)
        except TranscriptError as e:
            raise StoreError(f"{info.file_name}: {e}") from None
        finally:
            os.close(fd)

    def load_transcript(self, session_id: str) -> Transcript:
        """The whole session, parsed (for summarizing a session that has no summary).

        A corrupted summary block (stray or repeated markers) is dropped: the turns remain.
        """
        text = self._read_text(self.path_for(session_id))
        try:
            return parse_lenient(text)
        except TranscriptError as e:
            raise TranscriptError(f"{session_id}.md: {e}") from None


def _matching(ref: str, ids: list[str]) -> list[str]:
    """The ids ``ref`` names, from the first rule that matches any: the id itself, then ids
    starting with it, ending with it (the random part users remember), containing it."""
    for rule in (str.__eq__, str.startswith, str.endswith, str.__contains__):
        found = [i for i in ids if rule(i, ref)]
        if found:
            return found
    return []


def resolve(ref: str, listing: Listing) -> SessionInfo:
    """A listing number (1-based), or a session id: the full id, else a unique prefix, else a
    unique suffix (``d57d``), else a unique substring -> the session. Digits are a number when
    in range, else they may name the whole random part of an id (``4821``)."""
    ref = ref.strip()
    sessions = listing.sessions
    if ref.isascii() and ref.isdigit():
        if not sessions:
            raise StoreError("there are no saved sessions to choose from")
        n = int(ref)
        if 1 <= n <= len(sessions):
            return sessions[n - 1]
        if not any(s.session_id.endswith(f"_{ref}") for s in sessions):
            raise StoreError(f"no session number {n}: choose between 1 and {len(sessions)}")
        ref = f"_{ref}"  # only a whole random part: "3" must not match "..._143022_..."
    ref = ref.removesuffix(".md")
    if "/" in ref or "\\" in ref or ".." in ref or not _ID_RE.fullmatch(ref):
        raise StoreError(f"invalid session id: {ref[:80]!r}")
    matches = _matching(ref, [s.session_id for s in sessions])
    if len(matches) == 1:
        return next(s for s in sessions if s.session_id == matches[0])
    if matches:
        more = f" and {len(matches) - 10} more" if len(matches) > 10 else ""
        raise StoreError(f"ambiguous session id {ref!r}: it matches "
                         f"{', '.join(matches[:10])}{more}")
    bad = _matching(ref, [name.removesuffix(".md") for name, _ in listing.problems])
    if bad:
        why = next(w for name, w in listing.problems if name.removesuffix(".md") == bad[0])
        raise StoreError(f"session {ref!r} cannot be used: {why}")
    raise StoreError(f"no session {ref!r} (see 'sessions' for the list)")


def _renumber(info: SessionInfo, number: int) -> SessionInfo:
    return SessionInfo(number, *[getattr(info, f) for f in SessionInfo.__dataclass_fields__
                                 if f != "number"])


def _read_info(entry: os.DirEntry[str]) -> SessionInfo:
    name = entry.name
    if entry.is_symlink():
        raise StoreError(f"symbolic link to {os.readlink(entry.path)!r}, not followed")
    if not entry.is_file(follow_symlinks=False):
        raise StoreError("not a regular file")
    if not _ID_RE.fullmatch(name[:-3]):
        raise StoreError("file name is not a session id")
    try:
        fd = os.open(entry.path, os.O_RDONLY | _NOFOLLOW)
    except OSError as e:
        raise StoreError(f"cannot open: {e.strerror}") from None
    try:
        seen = glance(lambda at, n: os.pread(fd, n, at), os.fstat(fd).st_size)
    finally:
        os.close(fd)
    return _info(entry, seen)


def _info(entry: os.DirEntry[str], seen: Glance) -> SessionInfo:
    h = seen.header
    if h.session_id != entry.name[:-3]:
        raise StoreError(f"its Session ID {h.session_id[:60]!r} does not match the file name")
    preview = seen.first_query
    if preview is not None and len(preview) > 60:
        preview = preview[:59] + "…"
    queries = h.total_queries if seen.has_summary else max(h.total_queries, seen.last_query)
    # The header's totals are only written at finalize: without a summary (a live or crashed
    # session) count the footers; exact from the whole file, else a lower bound.
    if seen.has_summary:
        tokens, exact = h.total_tokens, True
    elif seen.whole:
        tokens, exact = seen.query_tokens, True
    else:
        tokens, exact = max(h.total_tokens, seen.query_tokens), False
    return SessionInfo(0, h.session_id, entry.name, Path(entry.path), h.agent, h.agent_path,
                       h.model, h.provider, h.date, queries, tokens, preview,
                       seen.has_summary, h.resumed_from, h.previous_session,
                       seen.summary_problem, exact)
