"""MemoryStore: the facts and episodes of one agent in one project (``<agent>.facts.jsonl``,
``.episodes.jsonl`` in the project's directory, see memory/location.py), and the facts about
the person in the user's file (``user.facts.jsonl``), which hold everywhere."""

# Every change holds the file's lock (``<file>.lock``, flock through filelock): a new fact or
# episode is appended as one line; forgetting and marking facts used rewrite the file through a
# temporary file and an atomic rename, keeping every other line as it was, damaged ones too. So
# two processes writing at once lose nothing, and a damaged line is reported, skipped and kept.
# Ids come from one counter in the memory's home (``ids``, under its own lock, taken after a facts
# file's lock), shared by every project and the user's file, so an id names one fact wherever it
# is listed and never changes; a forgotten fact keeps its id and its line (a tombstone) and is
# never added again. Every line rollchat writes is signed (memory/signing.py); a line that is
# not is a fact added outside rollchat: listed (``listed``, ``pending``), never offered to the
# model (``facts``, ``relevant``, ``search``) until ``accept`` signs it.

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from pathlib import Path

from rollchat.errors import RollchatError, StoreError
from rollchat.memory import search
from rollchat.memory.layers import local_now
from rollchat.memory.records import (
    PERSONAL,
    SCOPES,
    Episode,
    Fact,
    RecordError,
    Stored,
    check_fact_fields,
    episode_line,
    fact_line,
    id_in_damaged,
    normalized,
    parse_episode,
    parse_fact,
)
from rollchat.memory.sensitive import secret_in
from rollchat.memory.signing import Signer, private_dirs
from rollchat.storage.listing import slug
from rollchat.storage.session_file import NOFOLLOW, atomic_write, write_all

__all__ = ["Episode", "Fact", "MemoryStore", "MemoryStoreError", "SecretRefused",
           "default_user_dir"]

MEMORY_DIR = "memory"
USER_FILE = "user.facts.jsonl"
IDS_FILE = "ids"
LOCK_WAIT = 10.0  # seconds a write waits for another process's write


class MemoryStoreError(RollchatError):
    """A memory file cannot be read or written, or a fact id or value is wrong."""


class SecretRefused(MemoryStoreError):
    """A fact that states a secret (a password, an API key): never kept (see memory.sensitive)."""


def default_user_dir() -> Path:
    """Where user-level facts live: ``memory/`` in the user data directory."""
    import platformdirs

    return Path(platformdirs.user_data_dir("rollchat")) / MEMORY_DIR


@dataclass
class _File:
    """One facts file as read: every line (raw bytes), the records parsed from them."""

    path: Path
    scope: str
    lines: list[bytes] = field(default_factory=list)
    records: dict[int, Stored] = field(default_factory=dict)  # line index -> record
    taken: set[int] = field(default_factory=set)  # ids in use, damaged lines' too


class MemoryStore:
    """Facts and episodes of one agent (see the top of this module). ``user_dir``: where the
    user-level facts file is (None: no user-level store); ``scope``: where new preferences and
    background facts go ("project", or "user": the user-level file); ``directory``: the
    project's (default: ``<sessions_dir>/memory``); ``home``: where the signing key and the id
    counter are (default: ``user_dir``, else ``directory``); ``label``: written to a
    ``project`` file in ``directory`` when it is made, so a person knows whose it is."""

    def __init__(self, sessions_dir: Path, agent_key: str, *, user_dir: Path | None = None,
                 scope: str = "project", directory: Path | None = None,
                 home: Path | None = None, label: str | None = None) -> None:
        if scope not in SCOPES:
            raise MemoryStoreError(f"memory scope must be project or user, not {scope!r}")
        if scope == "user" and user_dir is None:
            raise MemoryStoreError("memory scope user needs a user directory")
        self.dir = directory or sessions_dir / MEMORY_DIR  # (see memory/location.py)
        name = slug(agent_key)
        self.facts_path = self.dir / f"{name}.facts.jsonl"
        self.episodes_path = self.dir / f"{name}.episodes.jsonl"
        self.user_path = user_dir / USER_FILE if user_dir is not None else None
        self.scope = scope
        self.agent_key = agent_key
        self.label = label
        self.home = home or user_dir or self.dir
        self.signer = Signer(self.home)
        self.problems: list[str] = []  # damaged lines met by the latest read
        self._told: set[str] = set()

    # ------------------------------------------------------------ reading
    def _paths(self) -> list[tuple[Path, str]]:
        paths = [(self.facts_path, "project")]
        if self.user_path is not None:
            paths.append((self.user_path, "user"))
        return paths

    def _read_lines(self, path: Path) -> list[bytes]:
        try:
            fd = os.open(path, os.O_RDONLY | NOFOLLOW)
        except FileNotFoundError:
            return []
        except OSError as e:
            raise MemoryStoreError(f"cannot read {path}: {_why(e, path)}") from None
        try:
            with os.fdopen(fd, "rb") as f:
                data = f.read()
        except OSError as e:
            raise MemoryStoreError(f"cannot read {path}: {_why(e, path)}") from None
        lines = data.split(b"\n")
        if lines and lines[-1] == b"":
            lines.pop()
        return lines

    def _note(self, path: Path, number: int, problem: str) -> None:
        self.problems.append(f"{path} line {number}: {problem}; skipped")

    def _read_facts(self, path: Path, scope: str) -> _File:
        read = _File(path, scope, self._read_lines(path))
        for index, raw in enumerate(read.lines):
            if not raw.strip():
                continue
            try:
                stored = parse_fact(raw.decode("utf-8"), scope)
            except (RecordError, UnicodeDecodeError) as e:
                text = raw.decode("utf-8", "replace")
                self._note(path, index + 1, str(e) if isinstance(e, RecordError)
                           else "not UTF-8")
                damaged = id_in_damaged(text)
                if damaged is not None:
                    read.taken.add(damaged)
                continue
            if stored.fact.id in read.taken:
                self._note(path, index + 1, f"id {stored.fact.id} is used by an earlier line")
                continue
            read.taken.add(stored.fact.id)
            if not self.signer.verify(stored, scope):
                stored = replace(stored, fact=replace(stored.fact, outside=True))
            read.records[index] = stored
        return read

    def _read_all(self) -> list[_File]:
        self.problems = []
        return [self._read_facts(path, scope) for path, scope in self._paths()]

    def take_problems(self) -> list[str]:
        """Problems of the latest read not yet taken (each damaged line is told once)."""
        new = [p for p in self.problems if p not in self._told]
        self._told.update(new)
        return new

    def _stored(self) -> list[Stored]:
        return sorted((s for f in self._read_all() for s in f.records.values()),
                      key=lambda s: s.fact.id)

    def facts(self) -> list[Fact]:
        """The live facts of both stores that rollchat wrote, by id: what the model may be
        given (forgotten ones and those added outside rollchat left out)."""
        return [s.fact for s in self._stored() if s.forgotten is None and not s.fact.outside]

    def listed(self) -> list[Fact]:
        """Every live fact of both stores, by id, those added outside rollchat too (marked)."""
        return [s.fact for s in self._stored() if s.forgotten is None]

    def pending(self) -> list[Fact]:
        """The live facts added outside rollchat, waiting for the user's review."""
        return [f for f in self.listed() if f.outside]

    def forgotten(self) -> list[Fact]:
        return [s.fact for s in self._stored() if s.forgotten is not None]

    def known(self) -> set[str]:
        """The normalized texts of every fact rollchat wrote, forgotten ones too (see
        ``add``)."""
        return {normalized(s.fact.text) for s in self._stored() if not s.fact.outside}

    def get(self, fact_id: int) -> Fact | None:
        return next((f for f in self.listed() if f.id == fact_id), None)

    # ------------------------------------------------------------ writing
    @contextmanager
    def locked(self, path: Path) -> Iterator[None]:
        """Hold the lock of the memory file at ``path`` (``memory edit`` holds it too)."""
        from filelock import FileLock, Timeout

        try:
            private_dirs(path.parent)
            self._labelled(path.parent)
            with FileLock(f"{path}.lock", timeout=LOCK_WAIT, mode=0o600):
                yield
        except Timeout:
            raise MemoryStoreError(f"{path} is locked by another process") from None
        except OSError as e:
            raise MemoryStoreError(f"cannot write {path}: {_why(e, path)}") from None

    def _labelled(self, folder: Path) -> None:
        """The ``project`` file of this project's directory, when it has none yet."""
        if self.label is None or folder != self.dir or (folder / "project").exists():
            return
        self._write(folder / "project", f"{self.label}\n".encode())

    def _append(self, path: Path, line: str) -> None:
        """Append one line (holding the lock), after a newline if a damaged last line has
        none, fsynced."""
        data = line.encode("utf-8") + b"\n"
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | NOFOLLOW, 0o600)
        try:
            size = os.fstat(fd).st_size
            if size and _last_byte(path, size) != b"\n":
                data = b"\n" + data
            write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)

    def line(self, stored: Stored, scope: str) -> str:
        """The line rollchat writes for ``stored`` in a store of kind ``scope``: signed, unless
        the record was added outside rollchat (a change to it, e.g. forgetting it, does not
        make it rollchat's: only ``accept`` does)."""
        if stored.fact.outside:
            return fact_line(stored)
        return fact_line(self.signer.signed(stored, scope))

    def _rewrite(self, read: _File, changed: dict[int, Stored]) -> None:
        """Write ``read``'s file with the records at ``changed`` line indexes replaced and
        every other line (damaged ones too) as it was: temporary file, fsync, rename."""
        lines = [self.line(changed[i], read.scope).encode("utf-8") if i in changed else raw
                 for i, raw in enumerate(read.lines)]
        self._write(read.path, b"".join(line + b"\n" for line in lines))

    def write_text(self, path: Path, text: str) -> None:
        """Replace the file with ``text`` (the caller holds its lock)."""
        self._write(path, text.encode("utf-8"))

    def _write(self, path: Path, data: bytes) -> None:
        """Replace the file with ``data`` (a temporary file, fsync, rename); the caller holds
        its lock. MemoryStoreError, the file left unchanged, when it cannot."""
        try:
            atomic_write(path, data)
        except StoreError as e:
            raise MemoryStoreError(str(e)) from None

    def _target(self, category: str) -> tuple[Path, str]:
        if self.scope == "user" and category in PERSONAL and self.user_path is not None:
            return self.user_path, "user"
        return self.facts_path, "project"

    def add(self, text: str, category: str, *, confidence: float = 1.0,
            source_session: str | None = None, source_turn: int | None = None) -> Fact | None:
        """Keep a new fact; None when the same text is known already (a forgotten fact
        included: forgetting is for good). MemoryStoreError on a bad value."""
        try:
            text = check_fact_fields(text, category, confidence)
        except RecordError as e:
            raise MemoryStoreError(f"not a valid fact: {e}") from None
        secret = secret_in(text)
        if secret is not None:
            raise SecretRefused(f"not remembered: it looks like {secret}, and remembered facts "
                                "are sent to the model in later requests and kept in a plain "
                                "file; keep secrets out of memory")
        path, scope = self._target(category)
        key = normalized(text)
        with self.locked(path):
            files = self._read_all()
            if any(normalized(s.fact.text) == key and not s.fact.outside
                   for f in files for s in f.records.values()):
                return None
            ident = self.new_id(max((i for f in files for i in f.taken), default=0))
            fact = Fact(ident, text, category, float(confidence), source_session, source_turn,
                        local_now().replace(microsecond=0), None, scope)
            self._append(path, self.line(Stored(fact, None), scope))
        return fact

    def new_id(self, above: int = 0) -> int:
        """The next id of the counter every store of this home shares (higher than ``above``,
        the highest the caller's files hold); the caller holds its facts file's lock."""
        counter = self.home / IDS_FILE
        with self.locked(counter):
            try:
                last = int(counter.read_text(encoding="ascii").strip() or 0)
            except FileNotFoundError:
                last = 0
            except (OSError, ValueError):  # damaged: the files' ids still keep it unique
                last = 0
            ident = max(last, above) + 1
            self._write(counter, f"{ident}\n".encode("ascii"))
        return ident

    def _change(self, ids: Iterable[int],
                change: Callable[[Stored], Stored | None]) -> list[Stored]:
        """Apply ``change`` to the records with these ids (None: leave it), file by file,
        each under its lock; the records as changed."""
        mine = set(ids)
        done: list[Stored] = []
        for path, scope in self._paths():
            if not mine or not path.exists():
                continue
            with self.locked(path):
                read = self._read_facts(path, scope)
                changed = {}
                for index, stored in read.records.items():
                    if stored.fact.id in mine:
                        new = change(stored)
                        if new is not None:
                            changed[index] = new
                if changed:
                    self._rewrite(read, changed)
                done.extend(changed.values())
        return done

    def forget(self, fact_id: int) -> Fact:
        """Forget a fact for good (its line stays, marked forgotten, so it is never extracted
        again). MemoryStoreError when there is no such live fact."""
        self.problems = []
        when = local_now().replace(microsecond=0)
        found: list[Stored] = []

        def tombstone(stored: Stored) -> Stored | None:
            found.append(stored)
            return replace(stored, forgotten=when) if stored.forgotten is None else None

        changed = self._change([fact_id], tombstone)
        found = [s for s in found if s.fact.id == fact_id]
        if not found:
            raise MemoryStoreError(f"there is no fact {fact_id} (`memory` lists them)")
        if not changed:
            raise MemoryStoreError(f"fact {fact_id} is already forgotten")
        return changed[0].fact

    def accept(self, ids: Iterable[int]) -> list[Fact]:
        """Make these facts added outside rollchat its own (the user reviewed them): their
        lines signed, so the model may be given them. The facts accepted."""
        self.problems = []

        def sign(stored: Stored) -> Stored | None:
            if not stored.fact.outside or stored.forgotten is not None:
                return None
            return replace(stored, fact=replace(stored.fact, outside=False))

        return [replace(s.fact, outside=False) for s in self._change(ids, sign)]

    def mark_used(self, ids: Iterable[int]) -> None:
        """Record that these facts were given to the model now (see ``stale``)."""
        when = local_now().replace(microsecond=0)

        def used(stored: Stored) -> Stored | None:
            if stored.forgotten is not None or stored.fact.outside:
                return None
            return replace(stored, fact=replace(stored.fact, last_used=when))

        self._change(ids, used)

    def secrets(self) -> list[tuple[Fact, str, bool]]:
        """The facts, forgotten ones too, that look like they hold a secret (kept before the
        filter of ``add`` existed, or written by hand): (fact, what it seems, forgotten)."""
        found: list[tuple[Fact, str, bool]] = []
        for stored in self._stored():
            what = secret_in(stored.fact.text)
            if what is not None:
                found.append((stored.fact, what, stored.forgotten is not None))
        return found

    def drop_secrets(self) -> list[Fact]:
        """Remove from the files the lines of the facts that look like they hold a secret,
        forgotten ones too (a forgotten fact keeps its text, so its line must go). The facts
        removed; the extraction filter keeps them from coming back."""
        self.problems = []
        dropped: list[Fact] = []
        for path, scope in self._paths():
            if not path.exists():
                continue
            with self.locked(path):
                read = self._read_facts(path, scope)
                gone = sorted(i for i, stored in read.records.items()
                              if secret_in(stored.fact.text) is not None)
                if not gone:
                    continue
                data = b"".join(raw + b"\n" for i, raw in enumerate(read.lines)
                                if i not in gone)
                self._write(path, data)
                dropped += [read.records[i].fact for i in gone]
        return dropped

    def stale(self, max_age_days: int, at: datetime | None = None) -> list[Fact]:
        """Live facts not used (or, never used, not made) in the last ``max_age_days``."""
        cutoff = (at or local_now()) - timedelta(days=max_age_days)
        return [f for f in self.facts() if (f.last_used or f.created) < cutoff]

    # ------------------------------------------------------------ searching
    def relevant(self, query: str, k: int = 5) -> list[Fact]:
        """The ``k`` live facts that match ``query`` best (FTS5 bm25); [] when none does."""
        facts = self.facts()
        return [facts[i] for i in search.rank([f.text for f in facts], query, k)]

    def search(self, query: str, k: int = 5) -> tuple[list[Fact], list[Episode]]:
        """The facts and the episodes that match ``query`` best (the memory_search tool)."""
        episodes = self.episodes()
        texts = [f"{e.title or ''}\n{e.summary}" for e in episodes]
        return (self.relevant(query, k),
                [episodes[i] for i in search.rank(texts, query, k)])

    # ------------------------------------------------------------ episodes
    def episodes(self) -> list[Episode]:
        """Every episode, oldest first (damaged lines reported in ``problems``, skipped)."""
        self.problems = []
        found = []
        for index, raw in enumerate(self._read_lines(self.episodes_path)):
            if not raw.strip():
                continue
            try:
                found.append(parse_episode(raw.decode("utf-8")))
            except (RecordError, UnicodeDecodeError) as e:
                self._note(self.episodes_path, index + 1,
                           str(e) if isinstance(e, RecordError) else "not UTF-8")
        return found

    def add_episode(self, session_id: str, summary: str, *, title: str | None = None,
                    span: str = "", created: datetime | None = None) -> Episode:
        """Keep one session's summary as an episode (at a compaction or an exit)."""
        episode = Episode(session_id, title, summary, span,
                          created or local_now().replace(microsecond=0))
        with self.locked(self.episodes_path):
            self._append(self.episodes_path, episode_line(episode))
        return episode

    def drop_episode(self, episode: Episode) -> bool:
        """Remove the newest line holding ``episode`` (a compaction undone); every other line
        kept as it was. False when it is not there (any more)."""
        with self.locked(self.episodes_path):
            lines = self._read_lines(self.episodes_path)
            for index in range(len(lines) - 1, -1, -1):
                try:
                    if parse_episode(lines[index].decode("utf-8")) == episode:
                        break
                except (RecordError, UnicodeDecodeError):
                    continue
            else:
                return False
            del lines[index]
            self._write(self.episodes_path, b"".join(line + b"\n" for line in lines))
        return True


def _why(error: OSError, path: Path) -> str:
    """What went wrong, for people: a symbolic link (never followed) is named as one."""
    import errno

    if error.errno in (errno.ELOOP, errno.EMLINK) or (
            error.errno is not None and path.is_symlink()):
        return ("it is a symbolic link, which memory never follows (make it a regular file, "
                "or delete it to start afresh)")
    return str(error.strerror or error)


def _last_byte(path: Path, size: int) -> bytes:
    with path.open("rb") as f:
        f.seek(size - 1)
        return f.read(1)
