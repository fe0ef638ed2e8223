"""The sessions index: a rebuildable SQLite file, ``<sessions dir>/.index.sqlite``, that lists,
resolves and searches sessions without opening every file (storage.index_rows: its rows)."""

# Rows are keyed by file name, size and mtime_ns. Every read first compares them with the
# directory (one ``os.scandir``) and re-reads only the files that are new or changed (and
# those changed within ``RACY_NS`` of being indexed, whose mtime may not show a later write);
# rows of vanished files go. Saves update their file's rows too (``SessionStore`` calls
# ``saved``), best effort: a save never fails because of the index. SQLite's own locking (WAL,
# a busy timeout) lets several rollchat processes share it. Full-text search is FTS5 over each
# session's title, summary and turns (user and assistant text), ranked by bm25.
# The markdown files stay the source of truth: deleting the index loses nothing, and a corrupt
# or unreadable one is rebuilt. API: SessionIndex(dir).recent/page/listing/resolve/search.

from __future__ import annotations

import contextlib
import os
import re
import sqlite3
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

from rollchat.errors import StoreError, TranscriptError
from rollchat.storage.index_rows import (
    decode_info,
    encode_info,
    micros,
    row_key,
    row_name,
    search_parts,
    snippet_parts,
)
from rollchat.storage.listing import (
    DEFAULT_LIMIT,
    ORDER_COLUMNS,
    Hit,
    Listing,
    Page,
    SessionInfo,
    choose,
    file_info,
    not_current,
)
from rollchat.storage.listing import ORDER_SQL as RECENT

INDEX_NAME = ".index.sqlite"
SCHEMA = "rollchat-index 3"  # 2: SessionInfo.imported_from; 3: files.empty
RACY_NS = 2_000_000_000  # a row indexed this soon after its file's mtime is checked again
BATCH = 500  # files indexed per write transaction (other processes wait at most one batch)
READ_BUSY_MS = 10_000
# the lineage of sessions just listed or resolved is read without scanning the directory again
# (10,000 files stat'ed twice was half of `sessions --json`: bench/bench_listing.py)
LINEAGE_FRESH_SECONDS = 2.0
SAVE_BUSY_MS = 200  # a save waits this long for the index at most, then leaves it to the reads
# a save re-indexes the text of a file up to this size; a larger one's row is marked and its
# text re-read by the next listing or search (its row is racy: see _refresh)
SAVE_TEXT_MAX_BYTES = 256 * 1024
_TOKEN = re.compile(r"\w+", re.UNICODE)

_DDL = (
    "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS files(file TEXT PRIMARY KEY, size INTEGER NOT NULL, "
    "mtime_ns INTEGER NOT NULL, indexed_ns INTEGER NOT NULL, id TEXT, ts INTEGER, "
    "info TEXT, problem TEXT, empty INTEGER)",
    f"CREATE INDEX IF NOT EXISTS recent ON files({ORDER_COLUMNS}) WHERE info IS NOT NULL",
    "CREATE TABLE IF NOT EXISTS parts(rowid INTEGER PRIMARY KEY, file TEXT NOT NULL, "
    "part TEXT NOT NULL, UNIQUE(file, part))",
    "CREATE VIRTUAL TABLE IF NOT EXISTS docs USING fts5(text, "
    "tokenize='unicode61 remove_diacritics 2')",
)


# ---------------------------------------------------------------- errors


def _unwritable(error: sqlite3.Error) -> bool:
    """Whether ``error`` says the index cannot be written now (not that it is corrupt)."""
    text = str(error).lower()
    return isinstance(error, sqlite3.OperationalError) and any(w in text for w in (
        "locked", "busy", "readonly", "read-only", "unable to open", "disk i/o", "full",
        "permission"))


# ---------------------------------------------------------------- the index


class SessionIndex:
    """The index of the sessions directory ``root``. Every method is safe to call with no
    index file (it is built), a corrupt one (rebuilt) or a read-only directory (kept in
    memory for this call)."""

    def __init__(self, root: Path, *, path: Path | None = None) -> None:
        self.root = Path(root)
        self.path = path or self.root / INDEX_NAME
        self._fresh_at = float("-inf")  # when this object last brought the file up to date

    # ------------------------------------------------------------ connections

    def _open(self, busy_ms: int) -> sqlite3.Connection:
        if not self.path.exists():
            with contextlib.suppress(OSError):  # owner-only: it holds conversation text
                os.close(os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        conn = sqlite3.connect(self.path, timeout=busy_ms / 1000, isolation_level=None,
                               check_same_thread=False)
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(busy_ms)}")
            row = None
            with contextlib.suppress(sqlite3.OperationalError):  # no meta table yet
                row = conn.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
            if row is None or row[0] != SCHEMA:
                self._create(conn, fresh=row is not None)
            conn.execute("PRAGMA synchronous = NORMAL")
        except BaseException:
            conn.close()
            raise
        return conn

    def _create(self, conn: sqlite3.Connection, *, fresh: bool) -> None:
        if fresh:  # another schema: start over
            raise sqlite3.DatabaseError("index of another version")
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("BEGIN IMMEDIATE")
        try:
            for ddl in _DDL:
                conn.execute(ddl)
            conn.execute("INSERT OR REPLACE INTO meta VALUES ('schema', ?)", (SCHEMA,))
            conn.execute("COMMIT")
        except BaseException:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
            raise

    def _discard(self) -> None:
        for suffix in ("", "-wal", "-shm", "-journal"):
            with contextlib.suppress(OSError):
                os.unlink(f"{self.path}{suffix}")

    @contextlib.contextmanager
    def _connection(self, busy_ms: int = READ_BUSY_MS,
                    fresh_within: float = 0.0) -> Iterator[sqlite3.Connection]:
        """A connection to an index brought up to date with the directory (not again when
        this object did so less than ``fresh_within`` seconds ago: a listing's lineage read
        right after the listing). A corrupt index file is deleted and rebuilt; one that cannot
        be written (a read-only directory, a full disk, another process holding it too long)
        is replaced, for this call, by an index in memory."""
        conn: sqlite3.Connection | None = None
        recent = time.monotonic() - self._fresh_at < fresh_within
        for attempt in range(2):
            try:
                conn = self._open(busy_ms)
                if attempt or not recent:
                    started = time.monotonic()
                    self._refresh(conn)
                    self._fresh_at = started
                break
            except sqlite3.Error as e:
                if conn is not None:
                    conn.close()
                    conn = None
                if attempt or _unwritable(e):
                    break
                self._discard()  # corrupt, or of another version: rebuilt from the files
        if conn is None:
            conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
            self._create(conn, fresh=False)
            self._refresh(conn)
        try:
            yield conn
        finally:
            conn.close()

    # ------------------------------------------------------------ keeping it right

    def _refresh(self, conn: sqlite3.Connection) -> None:
        """Re-read the files that are new or changed since they were indexed; forget the
        vanished ones."""
        try:
            entries = [e for e in os.scandir(self.root)
                       if e.name.endswith(".md") and not e.name.startswith(".")]
        except FileNotFoundError:
            entries = []
        except OSError as e:
            raise StoreError(f"cannot read sessions directory {self.root}: "
                             f"{e.strerror}") from None
        known = {row_name(row[0]): row[1:] for row in conn.execute(
            "SELECT file, size, mtime_ns, indexed_ns FROM files")}
        stale: list[tuple[Path, os.stat_result]] = []
        for entry in entries:
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue  # gone meanwhile
            row = known.pop(entry.name, None)
            if (row is None or row[0] != st.st_size or row[1] != st.st_mtime_ns
                    or row[2] - row[1] < RACY_NS):
                stale.append((Path(entry.path), st))
        gone = list(known)
        for start in range(0, max(len(stale), len(gone)), BATCH):
            self._write(conn, stale[start:start + BATCH], gone[start:start + BATCH])

    def _write(self, conn: sqlite3.Connection, stale: Sequence[tuple[Path, os.stat_result]],
               gone: Sequence[str], *, text: bool = True) -> None:
        read = [(path, st, *self._read(path, st, text)) for path, st in stale]  # unlocked
        conn.execute("BEGIN IMMEDIATE")
        try:
            for name in gone:
                self._forget(conn, name)
            now = time.time_ns()
            for path, st, info, problem, parts in read:
                self._store(conn, path.name, st, now, info, problem, parts)
            conn.execute("COMMIT")
        except BaseException:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
            raise

    @staticmethod
    def _read(path: Path, st: os.stat_result, text: bool = True,
              ) -> tuple[SessionInfo | None, str | None, list[tuple[str, str]] | None]:
        try:
            info = file_info(path, st)
        except (StoreError, TranscriptError) as e:
            return None, str(e), []
        except OSError as e:  # vanished or unreadable between the listing and the read
            return None, f"cannot read: {e.strerror}", []
        return info, None, search_parts(str(path), info) if text else None

    @staticmethod
    def _forget(conn: sqlite3.Connection, name: str, *, text: bool = True) -> None:
        if text:
            rows = [(r[0],) for r in conn.execute("SELECT rowid FROM parts WHERE file = ?",
                                                  (row_key(name),))]
            conn.executemany("DELETE FROM docs WHERE rowid = ?", rows)
            conn.execute("DELETE FROM parts WHERE file = ?", (row_key(name),))
        conn.execute("DELETE FROM files WHERE file = ?", (row_key(name),))

    def _store(self, conn: sqlite3.Connection, name: str, st: os.stat_result, now: int,
               info: SessionInfo | None, problem: str | None,
               parts: Sequence[tuple[str, str]] | None) -> None:
        """Write the file's rows; ``parts`` None: its searchable text is unchanged."""
        self._forget(conn, name, text=parts is not None)
        conn.execute("INSERT INTO files VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", (
            row_key(name), st.st_size, st.st_mtime_ns, now,
            info.session_id if info else None, micros(info.date) if info else None,
            encode_info(info) if info else None, problem, int(info.empty) if info else None))
        for part, text in parts or ():
            rowid = conn.execute("INSERT INTO parts(file, part) VALUES (?, ?)",
                                 (row_key(name), part)).lastrowid
            conn.execute("INSERT INTO docs(rowid, text) VALUES (?, ?)", (rowid, text))

    def saved(self, file_name: str, *, text: bool = True) -> None:
        """Index the file ``file_name`` again after a save (``text`` False: only its header
        changed, e.g. its totals). Best effort and quick: if the index is busy or broken the
        next read repairs it; this never raises."""
        with contextlib.suppress(Exception):
            if not self.path.exists():
                return  # no index yet: the first read builds it whole
            path = self.root / file_name
            try:
                st: os.stat_result | None = os.lstat(path)
            except FileNotFoundError:
                st = None  # deleted: forget it
            conn = self._open(SAVE_BUSY_MS)
            try:
                if st is None:
                    self._write(conn, [], [file_name])
                else:
                    self._write(conn, [(path, st)], [],
                                text=text and st.st_size <= SAVE_TEXT_MAX_BYTES)
            finally:
                conn.close()

    # ------------------------------------------------------------ reading

    def page(self, limit: int | None = DEFAULT_LIMIT, exclude: str | None = None) -> Page:
        """The ``limit`` most recent sessions (None: all), numbered 1.. (THE numbering: the
        session ``exclude``, an id, is left out after numbering); the total; the files that
        are not sessions."""
        skip = f"{exclude}.md" if exclude else ""
        with self._connection() as conn:
            total = conn.execute("SELECT count(*) FROM files WHERE info IS NOT NULL "
                                 "AND file != ?", (skip,)).fetchone()[0]
            rows = conn.execute(f"SELECT info, file FROM files WHERE info IS NOT NULL {RECENT} "
                                "LIMIT ?", (-1 if limit is None else limit + bool(skip),))
            sessions = [decode_info(self.root, n, row[0]) for n, row in enumerate(rows, 1)
                        if row[1] != skip][:limit]
            problems = [(row_name(r[0]), r[1]) for r in conn.execute(
                "SELECT file, problem FROM files WHERE info IS NULL AND file != ? "
                "ORDER BY file", (skip,))]
        return Page(sessions, total, problems)

    def recent(self, limit: int = DEFAULT_LIMIT) -> list[SessionInfo]:
        """The ``limit`` most recent sessions, numbered 1.."""
        return self.page(limit).sessions

    def listing(self, exclude: str | None = None) -> Listing:
        """Every session, most recent first, numbered 1.. (``Store.list_sessions``)."""
        page = self.page(None, exclude)
        return Listing(page.sessions, page.problems)

    def lineage(self, sessions: Sequence[SessionInfo]) -> list[SessionInfo]:
        """``sessions`` and every session they continue (their parents, and theirs...), as far
        as the files go; the ancestors unnumbered (0)."""
        found = {s.session_id: s for s in sessions}
        wanted = {s.resumed_from for s in sessions if s.resumed_from} - set(found)
        if not wanted:
            return list(found.values())
        with self._connection(fresh_within=LINEAGE_FRESH_SECONDS) as conn:
            while wanted:
                marks = ", ".join("?" * len(wanted))
                rows = conn.execute(f"SELECT info FROM files WHERE info IS NOT NULL AND id IN "
                                    f"({marks})", sorted(wanted)).fetchall()
                new = [decode_info(self.root, 0, row[0]) for row in rows]
                found.update((s.session_id, s) for s in new)
                wanted = {s.resumed_from for s in new if s.resumed_from} - set(found)
        return list(found.values())

    def resolve(self, ref: str, current: str | None = None) -> SessionInfo:
        """The session ``ref`` names: a listing number, an id, a unique id prefix (or
        suffix, or substring); StoreError saying why not (an ambiguous one lists the ids;
        the chat's ``current`` session, an id, is no session to resume)."""
        with self._connection() as conn:
            ids = [r[0] for r in conn.execute(
                f"SELECT id FROM files WHERE info IS NOT NULL {RECENT}")]
            problems = [(row_name(r[0]), r[1]) for r in conn.execute(
                "SELECT file, problem FROM files WHERE info IS NULL")]
            found = choose(ref, len(ids), ids, problems)
            number = found if isinstance(found, int) else ids.index(found) + 1
            row = conn.execute(f"SELECT info FROM files WHERE info IS NOT NULL {RECENT} "
                               "LIMIT 1 OFFSET ?", (number - 1,)).fetchone()
        return not_current(decode_info(self.root, number, row[0]), current)

    def imported(self, marker: str) -> list[SessionInfo]:
        """The sessions whose Imported From holds ``marker`` (an import's digest, see
        import_cli), most recent first, unnumbered (0)."""
        with self._connection() as conn:  # LIKE narrows (its % and _ only widen); then checked
            rows = conn.execute(
                "SELECT info FROM files WHERE info IS NOT NULL AND info LIKE ? "
                f"{RECENT}", (f"%{marker}%",)).fetchall()
        found = (decode_info(self.root, 0, text) for (text,) in rows)
        # (a row can hold the marker elsewhere: in a title, a preview)
        return [info for info in found if marker in (info.imported_from or "")]

    def search(self, text: str, limit: int = DEFAULT_LIMIT) -> list[Hit]:
        """Sessions whose title, summary or turns hold every word of ``text`` (else, when
        none does, any of them), best first (bm25), one hit per session with a snippet of
        its best matching part. Any text is safe: words are quoted, never FTS5 syntax.
        StoreError when ``text`` has no word to look for."""
        words = _TOKEN.findall(text)
        if not words:
            raise StoreError("search needs a word to look for (letters or digits)")
        quoted = ['"' + w.replace('"', '""') + '"' for w in words[:64]]
        with self._connection() as conn:
            hits = self._matches(conn, " AND ".join(quoted), limit)
            if not hits and len(quoted) > 1:
                hits = self._matches(conn, " OR ".join(quoted), limit)
        return hits

    def _matches(self, conn: sqlite3.Connection, query: str, limit: int) -> list[Hit]:
        # each session's best matching part other than its title (shown beside the snippet
        # already): "" when only the title matched; sessions in the order of their best part
        best: dict[str, str] = {}
        for name, part, rowid in self._ranked(conn, query, max(limit, 1) * 50):
            if name not in best and len(best) >= limit:
                continue
            if not best.get(name) and part != "title":
                best[name] = self._snippet(conn, query, rowid)
            best.setdefault(name, "")
        hits: list[Hit] = []
        numbers = self._numbers(conn, set(best))
        for name, snippet in best.items():
            row = conn.execute("SELECT info FROM files WHERE file = ? AND info IS NOT NULL",
                               (name,)).fetchone()
            if row is None or name not in numbers:
                continue
            number = numbers[name]
            info = decode_info(self.root, number, row[0])
            parts = snippet_parts(" ".join(snippet.split()))
            hits.append(Hit(info.session_id, info.title, info.date,
                            "".join(f"**{t}**" if m else t for t, m in parts), number,
                            info.file_name, parts))
        return hits

    @staticmethod
    def _ranked(conn: sqlite3.Connection, query: str, count: int,
                ) -> Iterator[tuple[str, str, int]]:
        """The ``count`` best matching parts (file, part, rowid), best first (bm25; equal
        ones in rowid order, as FTS5's ``ORDER BY rank`` gives them). Ranked without their
        snippets or files: FTS5's own ``ORDER BY rank`` sorts every match (59,295 parts for
        one word of bench/bench_listing.py's: 180 ms), SQLite's sorter keeps only the best."""
        rowids = [r[0] for r in conn.execute(
            "SELECT rowid FROM docs WHERE docs MATCH ? ORDER BY bm25(docs), rowid LIMIT ?",
            (query, count))]
        for start in range(0, len(rowids), BATCH):
            chunk = rowids[start:start + BATCH]
            marks = ", ".join("?" * len(chunk))
            parts = {r[0]: (r[1], r[2]) for r in conn.execute(
                f"SELECT rowid, file, part FROM parts WHERE rowid IN ({marks})", chunk)}
            for rowid in chunk:
                if rowid in parts:  # (as the join: a part row always goes with its text)
                    name, part = parts[rowid]
                    yield name, part, rowid

    @staticmethod
    def _numbers(conn: sqlite3.Connection, names: set[str]) -> dict[str, int]:
        """The number of each of the files ``names``: its place in RECENT's order (a total
        order: a session's id is its file's name). One read of the order: counting the
        sessions before each hit was 30 ms of a search's CPU over 10,000 sessions."""
        rows = conn.execute(f"SELECT file FROM files WHERE info IS NOT NULL {RECENT}")
        return {name: number for number, (name,) in enumerate(rows, 1) if name in names}

    @staticmethod
    def _snippet(conn: sqlite3.Connection, query: str, rowid: int) -> str:
        """The snippet of the matching part ``rowid``: its text around the match."""
        row = conn.execute("SELECT snippet(docs, 0, char(2), char(3), '…', 16) FROM docs "
                           "WHERE docs MATCH ? AND rowid = ?", (query, rowid)).fetchone()
        return row[0] if row is not None else ""
