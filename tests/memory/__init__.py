"""The memory tests, and where a chat run in a test keeps its project's memory."""
from pathlib import Path

from rollchat.memory.location import project_key
from tests.e2e import user_memory


def project_memory(home: Path, cwd: Path) -> dict[str, Path]:
    """The ``directory`` and ``home`` of the store a chat run in ``cwd`` (no git root above
    it) with ``user_dirs(home)`` keeps its project's memory in (see memory/location.py)."""
    memory = user_memory(home)
    return {"directory": memory / "projects" / project_key(cwd.resolve()), "home": memory}
