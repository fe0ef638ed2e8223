"""A session's project instructions (agents/instructions.py): read when each working context
starts (the chat's start, a compaction, resume, fork, a handoff's new session) and by
``instructions reload``; a change is announced, since it costs one prompt-cache miss."""

from __future__ import annotations

from collections.abc import Callable, Generator
from pathlib import Path

from rollchat.agents.instructions import Instructions, git_root, load, shown
from rollchat.config.settings import InstructionsConfig, default_user_config_dir
from rollchat.events import Event, Notice
from rollchat.text.wording import plural

Loader = Callable[[], Instructions]


def loader(config: InstructionsConfig, cwd: Path | None = None,
           user_dir: Path | None = None, window: Callable[[], int] | None = None) -> Loader:
    """How a session reads its instructions: ``config``'s names from ``cwd`` (default: the
    working directory when read) and the user config directory, bounded by
    ``instructions.max_bytes`` and a share of the model's context ``window`` (the window when
    read: it may shrink); nothing when disabled."""
    if not config.enabled:
        return Instructions

    def read() -> Instructions:
        return load(config.files, cwd or Path.cwd(), user_dir or default_user_config_dir(),
                    config.max_bytes, window=window() if window is not None else None)

    return read


def with_instructions(persona: str, instructions: Instructions) -> str:
    """The stable prompt's first layers: the agent's system prompt, then the instructions."""
    if not instructions.text:
        return persona
    return f"{persona}\n\n{instructions.text}" if persona else instructions.text


class SessionInstructions:
    """The instructions the current working context was given, and the lines to tell."""

    def __init__(self, read: Loader) -> None:
        self.read = read
        self.current: Instructions | None = None
        self.pending: list[Notice] = []  # not told yet: problems, a change picked up

    def refresh(self, why: str) -> Instructions:
        """Read the files again; a change from what the last context had is announced
        (``why``: "at this compaction", "by `instructions reload`")."""
        new = self.read()
        old, self.current = self.current, new
        for problem in new.problems:
            if old is None or problem not in old.problems:
                self.pending.append(Notice("warning", f"instructions: {problem}"))
        if new.cut and (old is None or new.cut != old.cut):
            self.pending.append(Notice("warning", new.cut))
        if old is not None and old.text != new.text:
            self.pending.append(Notice("info", f"Project instructions changed; the new text is "
                                       f"used from now on ({why}; the prompt cache misses "
                                       f"once): {summary(new)}"))
        return new

    def told(self) -> Generator[Event, None, None]:
        """The notices not told yet (each once)."""
        pending, self.pending = self.pending, []
        yield from pending


def summary(instructions: Instructions) -> str:
    """``2 files, 1,234 bytes`` (or ``none found``)."""
    if not instructions.sources:
        return "none found"
    size = sum(s.size for s in instructions.sources)
    return f"{plural(len(instructions.sources), 'file')}, {size:,} bytes"


def listing(instructions: Instructions | None, cwd: Path, home: Path) -> list[str]:
    """The ``instructions`` command's lines: each file loaded, in the prompt's order (named
    from the repository root, else ``cwd``)."""
    cwd = git_root(cwd) or cwd
    if instructions is None or not instructions.sources:
        out = ["No project instructions loaded (no AGENTS.md, CLAUDE.md or GEMINI.md in the "
               "user config directory, the repository root or the directories down to here)."]
    else:
        out = [f"Project instructions in the system prompt ({summary(instructions)}), in "
               "order:"]
        for source in instructions.sources:
            via = (f"  (included by {shown(source.included_from, cwd, home)})"
                   if source.included_from is not None else "")
            out.append(f"  {shown(source.path, cwd, home)}  {source.size:,} bytes{via}")
    if instructions is not None:
        if instructions.cut:
            out.append(instructions.cut)
        out += [f"  {p}" for p in instructions.problems]
    out.append("A change to these files is picked up at the next compaction, or now with "
               "`instructions reload`.")
    return out
