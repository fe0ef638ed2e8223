"""Where an agent's memory lives: ``memory.dir`` when the config sets it, else this project's
``<sessions dir>/memory`` when it already holds memory (where rollchat kept it before), else
``memory/`` in the user data directory, so that it is found from any directory."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rollchat.config.settings import Config


@dataclass(frozen=True)
class Location:
    """The memory's directory, and why it is that one (as the user is told)."""

    dir: Path
    why: str

    def line(self) -> str:
        return f"Memory lives in {self.dir} ({self.why}; memory.dir in the config sets it)."


def memory_location(cfg: Config) -> Location:
    """Where the memory of ``cfg``'s agents is read and written (see the module's top): a
    search order, so an existing project's memory stays where it is and is found there."""
    from rollchat.memory.store import MEMORY_DIR, default_user_dir

    if cfg.memory.dir is not None:
        return Location(cfg.memory.dir, "set by memory.dir")
    project = cfg.session.dir / MEMORY_DIR
    if _holds_memory(project):
        return Location(project, "this project's sessions directory, where it was kept "
                                 "before")
    return Location(default_user_dir(), "the user data directory: the same from any "
                                        "directory")


def _holds_memory(directory: Path) -> bool:
    from rollchat.memory.store import USER_FILE

    try:
        return any(p.name.endswith((".facts.jsonl", ".episodes.jsonl"))
                   and p.name != USER_FILE for p in directory.iterdir())
    except OSError:  # none there (or unreadable: the store says so when it reads)
        return False
