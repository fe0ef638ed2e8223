"""From one store for every directory to a store per project: the upgrade of the user data
directory's memory (once), and the placing of the facts it could not place (at each start)."""

# Before, every directory's facts went to ``<home>/<agent>.facts.jsonl`` (and episodes beside
# it), preferences too unless ``memory.scope: user`` sent them to ``user.facts.jsonl``. The
# upgrade, once per home (``format`` holds 2 after it), under the home's lock:
# - preferences and background facts go to the user's file (they hold everywhere);
# - every other fact, and the episodes, go to ``unplaced/``: their project cannot be known
#   then. They are never sent to the model from there. Each start in a project moves into it
#   those whose session is one of this project's (its file is in the sessions directory), so a
#   decision comes back in the project it was made in, and nowhere else; ``rollchat memory``
#   says how many still wait, and ``rollchat memory review`` places them here or forgets them;
# - every fact keeps its id unless an earlier one took it (ids were per file before): then it
#   gets a new one from the one counter; lines rollchat wrote are signed; damaged lines are
#   kept as they were;
# - the old files are moved to ``migrated/``, never read again, so nothing is lost.

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from rollchat.memory.records import (
    PERSONAL,
    RecordError,
    Stored,
    fact_line,
    id_in_damaged,
    parse_fact,
)
from rollchat.memory.signing import private_dirs
from rollchat.memory.store import IDS_FILE, USER_FILE, MemoryStore
from rollchat.text.wording import plural

FORMAT_FILE = "format"
FORMAT = "2"
UNPLACED_DIR = "unplaced"
MIGRATED_DIR = "migrated"


@dataclass(frozen=True)
class Upgrade:
    """What the upgrade did (for its one line)."""

    to_user: int = 0
    unplaced: int = 0

    def line(self) -> str | None:
        if not self.to_user and not self.unplaced:
            return None
        return (f"memory: now kept per project: {plural(self.to_user, 'fact')} about you "
                f"kept as yours (they hold everywhere), {plural(self.unplaced, 'other fact')} "
                "waiting to be placed in their project (each moves there at the next start "
                "in it; 'rollchat memory review' places them here)")


def unplaced_store(home: Path, agent_key: str) -> MemoryStore:
    """The facts and episodes of the old shared store not placed in a project yet."""
    return MemoryStore(home, agent_key, directory=home / UNPLACED_DIR, home=home)


def upgrade(home: Path, user_dir: Path) -> Upgrade:
    """The upgrade of ``home`` (see the top of this module), when it has not run yet."""
    if (home / FORMAT_FILE).exists():
        return Upgrade()
    if not home.exists() or not any(p.name.endswith(".jsonl") for p in home.iterdir()):
        private_dirs(home)  # nothing of before: new
        MemoryStore(home, "user", home=home).write_text(home / FORMAT_FILE, FORMAT + "\n")
        return Upgrade()
    keeper = MemoryStore(home, "user", user_dir=user_dir, home=home)
    with keeper.locked(home / "upgrade"):
        if (home / FORMAT_FILE).exists():
            return Upgrade()
        done = _upgrade(home, user_dir, keeper)
        keeper.write_text(home / FORMAT_FILE, FORMAT + "\n")
    return done


def _upgrade(home: Path, user_dir: Path, keeper: MemoryStore) -> Upgrade:
    shared = sorted(p for p in home.glob("*.facts.jsonl")
                    if p.name != USER_FILE and not p.name.startswith("."))
    episodes = sorted(p for p in home.glob("*.episodes.jsonl") if not p.name.startswith("."))
    user_path = user_dir / USER_FILE
    records: list[tuple[Stored, Path]] = []  # (record, the file it goes to)
    kept_raw: dict[Path, list[bytes]] = {}  # damaged lines, kept as they were
    highest = 0
    for source in ([user_path] if user_path.exists() else []) + shared:
        agent = source.name.removesuffix(".facts.jsonl")
        for raw in _lines(source):
            try:
                stored = parse_fact(raw.decode("utf-8"), "project")
            except (RecordError, UnicodeDecodeError):
                target = user_path if source == user_path else \
                    home / UNPLACED_DIR / f"{agent}.facts.jsonl"
                kept_raw.setdefault(target, []).append(raw)
                highest = max(highest, id_in_damaged(raw.decode("utf-8", "replace")) or 0)
                continue
            personal = source == user_path or stored.fact.category in PERSONAL
            records.append((stored, user_path if personal else
                            home / UNPLACED_DIR / f"{agent}.facts.jsonl"))
    try:  # (a counter already there, e.g. the mark was lost: new ids above it)
        ident = int((home / IDS_FILE).read_text(encoding="ascii").strip() or 0)
    except (OSError, ValueError):
        ident = 0
    ident = max([ident, highest, *(s.fact.id for s, _ in records)])
    taken: set[int] = set()
    out: dict[Path, list[bytes]] = {path: list(lines) for path, lines in kept_raw.items()}
    counts = {"user": 0, "unplaced": 0}
    for stored, target in records:
        number = stored.fact.id
        if number in taken:  # (ids were per file: the first keeps it, the others a new one)
            ident += 1
            number = ident
        taken.add(number)
        scope = "user" if target == user_path else "project"
        moved = stored if stored.sig is not None and keeper.signer.verify(stored, scope) else \
            replace(stored, sig=None)
        moved = replace(moved, fact=replace(stored.fact, id=number, scope=scope))
        out.setdefault(target, []).append((fact_line(moved) if moved.sig else
                                           keeper.line(moved, scope)).encode("utf-8"))
        if stored.forgotten is None:
            counts["user" if scope == "user" else "unplaced"] += 1
    for path, lines in out.items():
        private_dirs(path.parent)
        keeper.write_text(path, b"".join(line + b"\n" for line in lines).decode("utf-8"))
    keeper.write_text(home / IDS_FILE, f"{ident}\n")
    for old in shared + episodes:
        if old in episodes:  # episodes wait to be placed too, as they are
            target = home / UNPLACED_DIR / old.name
            private_dirs(target.parent)
            _keep_copy(old, home)
            os.replace(old, target)
        else:
            _keep_copy(old, home, move=True)
    return Upgrade(counts["user"], counts["unplaced"])


def _keep_copy(path: Path, home: Path, move: bool = False) -> None:
    """The old file, as it was, in ``migrated/`` (never read again)."""
    folder = home / MIGRATED_DIR
    private_dirs(folder)
    if move:
        os.replace(path, folder / path.name)
    else:
        (folder / path.name).write_bytes(path.read_bytes())
        os.chmod(folder / path.name, 0o600)


def _lines(path: Path) -> list[bytes]:
    lines = path.read_bytes().split(b"\n")
    return [line for line in lines if line.strip()]


def place(home: Path, store: MemoryStore, sessions_dir: Path) -> int:
    """Move into ``store`` (this project's) the facts and episodes waiting in ``unplaced/``
    whose session is one of this project's (its file is in ``sessions_dir``); how many facts
    moved. A kill between the two writes leaves the fact in both; the next start finds it
    placed and only removes it from ``unplaced/``."""
    waiting = unplaced_store(home, store.agent_key)
    if not waiting.facts_path.exists() and not waiting.episodes_path.exists():
        return 0
    ours = {p.stem for p in _session_files(sessions_dir)}
    if not ours:
        return 0
    moved = _place_facts(waiting, store, lambda s: s.fact.source_session in ours)
    _place_episodes(waiting, store, ours)
    return moved


def claim(home: Path, store: MemoryStore, ids: set[int]) -> int:
    """Move the waiting facts ``ids`` into ``store`` (``rollchat memory review``: here)."""
    return _place_facts(unplaced_store(home, store.agent_key), store,
                        lambda s: s.fact.id in ids)


def _session_files(sessions_dir: Path) -> list[Path]:
    try:
        return [p for p in sessions_dir.iterdir() if p.suffix == ".md"]
    except OSError:
        return []


def _place_facts(waiting: MemoryStore, store: MemoryStore,
                 choose: Callable[[Stored], bool]) -> int:
    if not waiting.facts_path.exists():
        return 0
    with waiting.locked(waiting.facts_path):
        read = waiting._read_facts(waiting.facts_path, "project")
        chosen = {i: s for i, s in read.records.items()
                  if choose(s) and not s.fact.outside}
        if not chosen:
            return 0
        with store.locked(store.facts_path):
            there = store._read_facts(store.facts_path, "project")
            for stored in chosen.values():
                if stored.fact.id not in there.taken:
                    store._append(store.facts_path, store.line(stored, "project"))
        data = b"".join(raw + b"\n" for i, raw in enumerate(read.lines) if i not in chosen)
        waiting._write(waiting.facts_path, data)
    return sum(1 for s in chosen.values() if s.forgotten is None)


def _place_episodes(waiting: MemoryStore, store: MemoryStore, ours: set[str]) -> None:
    if not waiting.episodes_path.exists():
        return
    from rollchat.memory.records import episode_line, parse_episode

    with waiting.locked(waiting.episodes_path):
        lines = waiting._read_lines(waiting.episodes_path)
        chosen: set[int] = set()
        for index, raw in enumerate(lines):
            try:
                episode = parse_episode(raw.decode("utf-8"))
            except (RecordError, UnicodeDecodeError):
                continue
            if episode.session_id in ours:
                chosen.add(index)
                with store.locked(store.episodes_path):
                    store._append(store.episodes_path, episode_line(episode))
        if chosen:
            waiting._write(waiting.episodes_path, b"".join(
                raw + b"\n" for i, raw in enumerate(lines) if i not in chosen))
