"""What a start finds of this project's memory: the store (the user data directory upgraded
first, the facts of this project's sessions placed), where it is, and the lines the user is
told (the upgrade, memory found in the project and not read, facts to review)."""

from __future__ import annotations

from dataclasses import dataclass

from rollchat.config.settings import Config
from rollchat.errors import RollchatError
from rollchat.memory.location import Location
from rollchat.memory.store import MemoryStore
from rollchat.text.wording import plural


@dataclass(frozen=True)
class Opened:
    """The memory of this project as a start finds it: the store, where it is, and the lines
    the user is told (the upgrade, memory found in the project, facts to review)."""

    store: MemoryStore
    where: Location
    notes: tuple[str, ...]
    waiting: int  # facts of the old shared store not placed in a project yet


def opened(cfg: Config) -> Opened:
    """This project's memory store of the configured agent (MemoryStoreError on a bad
    setting): the user data directory upgraded first when it holds the old shared store (see
    memory/migrate.py), the facts of this project's sessions placed here, the copies a killed
    edit or rewrite left beside its files removed (see edit.sweep)."""
    from rollchat.memory.edit import sweep
    from rollchat.memory.importing import imported
    from rollchat.memory.location import found_in_project, holds_memory, memory_location
    from rollchat.memory.migrate import place, unplaced_store, upgrade

    where = memory_location(cfg)
    store = MemoryStore(cfg.session.dir, cfg.agent.key, user_dir=where.user_dir,
                        scope=cfg.memory.scope, directory=where.dir, home=where.home,
                        label=str(where.project))
    sweep([store.dir, where.user_dir, where.home / "unplaced"])
    notes = [line for line in [upgrade(where.home, where.user_dir).line()] if line]
    place(where.home, store, cfg.session.dir)
    for folder in found_in_project(cfg, where):
        if imported(where.home, holds_memory(folder)):
            continue  # (imported as it is: no news)
        notes.append(f"memory: {folder} holds memory files, not read: memory is never read "
                     f"from a project ('rollchat memory import {folder}' shows what it holds "
                     "and adds it if you say so)")
    try:
        pending = len(store.pending())
        waiting = len(unplaced_store(where.home, cfg.agent.key).listed())
    except RollchatError:
        pending = waiting = 0
    if pending:
        notes.append(f"memory: {plural(pending, 'fact')} {'was' if pending == 1 else 'were'} "
                     "added outside rollchat and {} not sent to the model until you review "
                     "{}: 'rollchat memory review'".format(*(("is", "it") if pending == 1
                                                           else ("are", "them"))))
    return Opened(store, where, tuple(notes), waiting)


def open_store(cfg: Config) -> MemoryStore:
    """This project's memory store (see ``opened``)."""
    return opened(cfg).store


