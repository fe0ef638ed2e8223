"""``rollchat memory import PATH``: the facts and episodes of memory files rollchat does not read
by itself (a project's ``sessions/memory``, a copy from another machine), read and sorted into
what would be added and what not; the caller shows it and asks before ``add`` adds it."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from rollchat.errors import RollchatError
from rollchat.memory.records import Episode, RecordError, normalized, parse_episode, parse_fact
from rollchat.memory.sensitive import secret_in
from rollchat.memory.store import MemoryStore, MemoryStoreError

MAX_FILE_BYTES = 20_000_000  # far more than any memory file rollchat writes
IMPORTED_FILE = "imported"  # in the memory's home: the SHA-256 of each file imported


@dataclass(frozen=True)
class Candidate:
    """A fact an import would add, as its file holds it."""

    text: str
    category: str
    confidence: float
    source_session: str | None
    source_turn: int | None


@dataclass
class Plan:
    """What importing PATH would do."""

    facts: list[Candidate] = field(default_factory=list)
    episodes: list[Episode] = field(default_factory=list)
    known: int = 0  # facts already remembered (or forgotten for good)
    secrets: int = 0  # facts that look like a secret: never added
    damaged: list[str] = field(default_factory=list)  # ``file line N: what``


def files_of(path: Path) -> list[Path]:
    """The memory files PATH names: itself, or the ``*.facts.jsonl`` and ``*.episodes.jsonl``
    of a directory. MemoryStoreError when there are none."""
    if path.is_dir():
        found = sorted(p for p in path.iterdir()
                       if p.name.endswith((".facts.jsonl", ".episodes.jsonl")))
        if not found:
            raise MemoryStoreError(f"{path} holds no memory files (*.facts.jsonl, "
                                   "*.episodes.jsonl)")
        return found
    if not path.exists():
        raise MemoryStoreError(f"{path} does not exist")
    return [path]


def _read(path: Path) -> bytes:
    """A regular file's bytes (never a FIFO or a device), bounded."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as e:
        raise MemoryStoreError(f"cannot read {path}: {e.strerror or e}") from None
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(f.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise MemoryStoreError(f"{path} is not a regular file")
        if info.st_size > MAX_FILE_BYTES:
            raise MemoryStoreError(f"{path} has {info.st_size:,} bytes, more than a memory file "
                                   f"holds ({MAX_FILE_BYTES:,})")
        return f.read(MAX_FILE_BYTES + 1)


def _digest(path: Path) -> str | None:
    import hashlib

    try:
        return hashlib.sha256(_read(path)).hexdigest()
    except MemoryStoreError:
        return None


def record_imported(store: MemoryStore, files: list[Path]) -> None:
    """Note that these files (as they are now) were imported, so that a start no longer
    reports them (see ``imported``)."""
    digests = [d for d in map(_digest, files) if d is not None]
    path = store.home / IMPORTED_FILE
    with store.locked(path):
        try:
            known = path.read_text(encoding="ascii").split()
        except (OSError, UnicodeDecodeError):
            known = []
        store.write_text(path, "".join(f"{d}\n" for d in dict.fromkeys(known + digests)))


def imported(home: Path, files: list[Path]) -> bool:
    """Whether every one of ``files`` was imported as it is now (a change: not any more)."""
    try:
        known = set((home / IMPORTED_FILE).read_text(encoding="ascii").split())
    except (OSError, UnicodeDecodeError):
        return False
    return bool(files) and all(_digest(f) in known for f in files)


def plan(path: Path, store: MemoryStore) -> Plan:
    """What importing ``path`` into ``store`` would add (MemoryStoreError when it cannot be
    read). A fact already known, forgotten or repeated is left out, as is one that looks like
    a secret, and an episode already kept; a line that is not a record is named, skipped."""
    found = Plan()
    try:
        known = store.known()
        stories = {(e.session_id, e.summary) for e in store.episodes()}
    except RollchatError as e:
        raise MemoryStoreError(str(e)) from None
    for source in files_of(path):
        episodes = source.name.endswith(".episodes.jsonl")
        for number, raw in enumerate(_read(source).split(b"\n"), 1):
            if not raw.strip():
                continue
            try:
                text = raw.decode("utf-8")
                if episodes:
                    episode = parse_episode(text)
                    if (episode.session_id, episode.summary) not in stories:
                        stories.add((episode.session_id, episode.summary))
                        found.episodes.append(episode)
                    continue
                stored = parse_fact(text, "project")
            except (RecordError, UnicodeDecodeError) as e:
                why = str(e) if isinstance(e, RecordError) else "not UTF-8"
                found.damaged.append(f"{source} line {number}: {why}")
                continue
            fact = stored.fact
            if stored.forgotten is not None:
                continue
            if secret_in(fact.text) is not None:
                found.secrets += 1
                continue
            key = normalized(fact.text)
            if key in known:
                found.known += 1
                continue
            known.add(key)
            found.facts.append(Candidate(fact.text, fact.category, fact.confidence,
                                         fact.source_session, fact.source_turn))
    return found


def add(found: Plan, store: MemoryStore) -> tuple[int, int]:
    """Add what ``found`` holds to ``store`` (new ids, signed as rollchat's: the user said
    yes); (facts, episodes) added."""
    facts = 0
    for c in found.facts:
        if store.add(c.text, c.category, confidence=c.confidence,
                     source_session=c.source_session, source_turn=c.source_turn) is not None:
            facts += 1
    for e in found.episodes:
        store.add_episode(e.session_id, e.summary, title=e.title, span=e.span,
                          created=e.created)
    return facts, len(found.episodes)
