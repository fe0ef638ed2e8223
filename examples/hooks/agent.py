"""Files: a small agent that writes and deletes text files in the working directory (run it
with the hooks of this folder: see README.md). The hooks, not the agent, guard keep/."""

from __future__ import annotations

from pathlib import Path

name = "Files"
system_prompt = "You write and delete the user's text files when asked."
approval = "auto"  # every call runs unasked: the PreToolUse hook is what guards keep/


def _inside(path: str) -> Path:
    target = (Path.cwd() / path).resolve()
    if not target.is_relative_to(Path.cwd().resolve()):
        raise ValueError(f"{path} is outside the working directory")
    return target


def write_file(path: str, text: str) -> str:
    """Write a text file (its folders are made).

    Args:
        path: The file, relative to the working directory.
        text: What it holds.
    """
    target = _inside(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text + "\n", encoding="utf-8")
    return f"wrote {path} ({len(text) + 1} bytes)"


def delete_file(path: str) -> str:
    """Delete a file.

    Args:
        path: The file, relative to the working directory.
    """
    _inside(path).unlink()
    return f"deleted {path}"


tools = [write_file, delete_file]
