"""The user's editor for a piece of text (``summary edit``): $VISUAL, else $EDITOR, else vi, on
a private temporary file; what the user saved comes back."""

from __future__ import annotations

import os
import shlex
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path

from rollchat.errors import RollchatError, UsageError


def editor_command(env: Mapping[str, str]) -> list[str]:
    """The editor to run, as argv: $VISUAL, else $EDITOR, else ``vi``."""
    command = env.get("VISUAL") or env.get("EDITOR") or "vi"
    try:
        argv = shlex.split(command)
    except ValueError as exc:
        raise UsageError(f"cannot read the editor command {command[:80]!r}: {exc}") from None
    if not argv:
        raise UsageError("the editor command ($VISUAL or $EDITOR) is empty")
    return argv


def edit_text(text: str, *, suffix: str = ".md", env: Mapping[str, str] | None = None) -> str:
    """Open ``text`` in the user's editor and return the file's text once the editor exits
    (RollchatError when it cannot run or fails: nothing is changed then)."""
    argv = editor_command(os.environ if env is None else env)
    with tempfile.TemporaryDirectory(prefix="rollchat-") as folder:
        path = Path(folder) / f"summary{suffix}"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        try:
            done = subprocess.run([*argv, str(path)], check=False)
        except OSError as exc:
            raise RollchatError(f"cannot run the editor {argv[0]!r}: {exc.strerror or exc} "
                                "(set $EDITOR); nothing was changed") from None
        if done.returncode != 0:
            raise RollchatError(f"the editor {argv[0]!r} exited with status {done.returncode}; "
                                "nothing was changed")
        try:
            return path.read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            raise RollchatError(f"cannot read the edited text: {exc.strerror}") from None
