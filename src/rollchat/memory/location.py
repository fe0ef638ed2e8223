"""Where memory lives: in the user's data directory (``memory/``, the *home*), the user's facts
in ``user.facts.jsonl`` there (``memory.user_dir`` moves them) and each project's in
``projects/<name>-<hash>/`` (``memory.dir`` names another directory for this project's); never
in a project: a memory directory found there is only reported (see ``found_in_project``)."""

# The project is the git root of the working directory (a ``.git`` directory or file), else the
# directory itself. Its directory's name is the root's name made safe and the first 10 hex
# digits of the SHA-256 of its absolute path, so a person finds it by name and two projects of
# the same name never share one; a ``project`` file in it holds the path it is for.

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from rollchat.config.settings import Config

PROJECTS_DIR = "projects"
PROJECT_FILE = "project"  # in a project's directory: the root path it is for
MEMORY_SUFFIXES = (".facts.jsonl", ".episodes.jsonl")


def memory_home() -> Path:
    """The user's memory directory: ``memory/`` in the user data directory."""
    import platformdirs

    return Path(platformdirs.user_data_dir("rollchat")) / "memory"


def project_root(cwd: Path) -> Path:
    """The project ``cwd`` is in: its git root, else ``cwd`` itself (absolute, resolved)."""
    here = cwd.resolve()
    for folder in (here, *here.parents):
        if (folder / ".git").exists():
            return folder
    return here


def project_key(root: Path) -> str:
    """``<name>-<hash>``: the name of a project's memory directory (see the module's top)."""
    import re

    name = re.sub(r"[^A-Za-z0-9._-]+", "-", root.name).strip("-.")[:40] or "root"
    digest = hashlib.sha256(os.fsencode(str(root))).hexdigest()[:10]
    return f"{name}-{digest}"


@dataclass(frozen=True)
class Location:
    """Where one project's memory and the user's are, and why (as the user is told)."""

    dir: Path  # this project's facts and episodes
    project: Path  # the project's root
    home: Path  # the signing key, the id counter, facts waiting to be placed
    user_dir: Path  # the user's facts (user.facts.jsonl)
    why: str

    def line(self) -> str:
        return (f"Memory of {self.project} lives in {self.dir} ({self.why}); the facts that "
                f"hold everywhere in {self.user_dir}.")


def memory_location(cfg: Config, cwd: Path | None = None) -> Location:
    """Where the memory of ``cfg``'s agents in the project of ``cwd`` (default: the working
    directory) is read and written."""
    home = memory_home()
    root = project_root(cwd or Path.cwd())
    user_dir = cfg.memory.user_dir or home
    if cfg.memory.dir is not None:
        return Location(cfg.memory.dir, root, home, user_dir, "set by memory.dir")
    return Location(home / PROJECTS_DIR / project_key(root), root, home, user_dir,
                    "this project's, in the user data directory")


def holds_memory(directory: Path) -> list[Path]:
    """The memory files (facts, episodes) in ``directory``; [] when none (or unreadable)."""
    try:
        return sorted(p for p in directory.iterdir() if p.name.endswith(MEMORY_SUFFIXES)
                      and not p.name.startswith("."))
    except OSError:
        return []


def found_in_project(cfg: Config, where: Location) -> list[Path]:
    """Memory directories inside the project (a checkout's ``sessions/memory``, where rollchat
    kept memory before, or a repository planted): never read, only reported."""
    own = {where.dir.resolve(), where.user_dir.resolve()}
    found: list[Path] = []
    for folder in (cfg.session.dir / "memory", where.project / "sessions" / "memory"):
        try:
            resolved = folder.resolve()
        except OSError:
            continue
        if resolved in own or resolved in found or not holds_memory(folder):
            continue
        found.append(resolved)
    return found
