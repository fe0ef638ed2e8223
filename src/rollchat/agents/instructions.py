"""Project instructions: AGENTS.md (and CLAUDE.md, GEMINI.md: instructions.files) from the user
config directory, the repository root and each directory down to the working directory, with
Claude Code's ``@path`` includes, merged in that order and bounded in size."""

# The order, the one docs/instructions.md documents: the user's file first (it applies to
# every project), then the repository root's, then each directory's on the way to the working
# directory, so the most specific comes last (and wins where they disagree, as in Codex and
# Claude Code). In one directory the names come in the order of instructions.files. A file
# that includes ``@other.md`` is followed by the included file (depth first, as Claude Code
# lists its imports), each file once: a second mention of one already read is skipped.
#
# Includes as Claude Code reads them: ``@path`` at the start of a line or after a space,
# outside code spans and fenced blocks; relative to the including file, ``~/`` for the home
# directory, absolute paths too; at most MAX_DEPTH hops; a missing file is left as text.
# Where rollchat differs: a project's files (and what they include) are read only inside the
# project (the repository root, else the working directory), symlinks resolved; the user's own
# file may include from the home directory too. A cloned repository cannot make rollchat send
# ~/.ssh/id_rsa or /etc/... to the provider (Claude Code asks before such an import).

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

MAX_DEPTH = 5  # Claude Code's import depth
HEADING = ("Project instructions (the user's first, then the repository root's down to the "
           "working directory's; a later file is more specific and wins where they disagree):")
_INCLUDE = re.compile(r"(?:^|(?<=\s))@((?:~/|\.{1,2}/|/)?[^\s`@]+)")
_FENCE = re.compile(r"^\s*(```|~~~)")
_SPAN = re.compile(r"`[^`]*`")


@dataclass(frozen=True)
class Source:
    """One file read: where, how many bytes of it were sent, and the file that included it
    (None: found by its name)."""

    path: Path
    size: int
    included_from: Path | None = None


@dataclass(frozen=True)
class Instructions:
    """What was loaded: the text for the system prompt ("" when there is none), its files,
    the line saying what was cut (None: nothing), and the files that could not be read."""

    text: str = ""
    sources: tuple[Source, ...] = ()
    cut: str | None = None
    problems: tuple[str, ...] = ()


def git_root(cwd: Path) -> Path | None:
    """The nearest directory at or above ``cwd`` holding ``.git`` (a folder, or the file of a
    worktree or submodule); None outside a repository."""
    for directory in (cwd, *cwd.parents):
        try:
            if (directory / ".git").exists():
                return directory
        except OSError:
            return None
    return None


def directories(cwd: Path, user_dir: Path | None) -> list[Path]:
    """Where instruction files are looked for, in order: the user config directory, then the
    repository root down to ``cwd`` (``cwd`` alone outside a repository)."""
    root = git_root(cwd) or cwd
    chain = [cwd, *cwd.parents]
    project = list(reversed(chain[:chain.index(root) + 1]))
    return ([user_dir] if user_dir is not None else []) + project


@dataclass
class _Reader:
    home: Path  # what ``@~/`` means
    limit: int  # the most bytes read of one file (past it the text is cut anyway)
    seen: set[Path] = field(default_factory=set)
    problems: list[str] = field(default_factory=list)

    def read(self, path: Path, roots: tuple[Path, ...], depth: int = 0,
             parent: Path | None = None) -> Iterator[tuple[Path, str, Path | None]]:
        """``path`` (once) and, after it, the files it includes; each must be inside one of
        ``roots`` (a symlink or an include cannot reach out of them)."""
        real = path.resolve()
        if real in self.seen:
            return
        if not any(_inside(real, root) for root in roots):
            self.problems.append(f"{path} is outside {_names(roots)}; not read")
            return
        self.seen.add(real)
        try:
            with real.open("rb") as handle:
                raw = handle.read(self.limit + 1)
        except OSError as exc:
            self.problems.append(f"{path}: cannot read it ({exc.strerror or exc})")
            return
        text = raw.decode("utf-8", errors="replace").lstrip("\ufeff").replace("\r\n", "\n")
        yield path, text.strip(), parent
        if depth >= MAX_DEPTH:
            return
        for target in includes(text, path.parent, self.home):
            if target.resolve() not in self.seen and target.is_file():
                yield from self.read(target, roots, depth + 1, path)


def includes(text: str, base: Path, home: Path) -> list[Path]:
    """The ``@path`` includes of ``text`` (outside code), resolved against ``base``
    (``@~/...``: against ``home``)."""
    out, fenced = [], False
    for line in text.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if fenced:
            continue
        for match in _INCLUDE.finditer(_SPAN.sub(" ", line)):
            raw = match.group(1).rstrip(".,;:)")
            path = home / raw[2:] if raw.startswith("~/") else Path(raw)
            out.append(path if path.is_absolute() else base / path)
    return out


def _names(roots: tuple[Path, ...]) -> str:
    return "the project" if len(roots) == 1 else "the project and the home directory"


def _inside(path: Path, root: Path) -> bool:
    try:
        path.resolve().relative_to(root.resolve())
    except (ValueError, OSError, RuntimeError):
        return False
    return True


def shown(path: Path, cwd: Path, home: Path) -> str:
    """``path`` as the prompt and the ``instructions`` command name it: relative to ``cwd``
    (the project: the repository root) when inside it, ``~/...`` in the home directory, else
    absolute."""
    for base, prefix in ((cwd, ""), (home, "~/")):
        try:
            return prefix + str(path.relative_to(base))
        except ValueError:
            continue
    return str(path)


def load(names: Sequence[str], cwd: Path, user_dir: Path | None, max_bytes: int,
         home: Path | None = None, window: int | None = None) -> Instructions:
    """The instructions found from ``cwd`` (see the order above), at most ``max_bytes``, and
    at most WINDOW_SHARE of a ``window`` of that many tokens (a token is at least a byte, so
    what is sent always leaves the chat most of the window)."""
    home = home or Path.home()
    project = git_root(cwd) or cwd
    bound = Bound(max_bytes, window)
    reader = _Reader(home, bound.bytes)
    found: list[tuple[Path, str, Path | None]] = []
    for directory in directories(cwd, user_dir):
        # a file found by its name is inside its directory's own place (the user config
        # directory, the project), symlinks resolved; the user's own file may include from
        # the home directory; a project's files (which may come with a cloned repository)
        # only from the project
        own = directory if directory == user_dir else project
        roots = (directory, home, project) if directory == user_dir else (project,)
        for name in names:
            candidate = directory / name
            try:
                if not candidate.is_file():
                    continue
            except OSError:
                continue
            if not _inside(candidate, own):
                where = "the user config directory" if directory == user_dir else "the project"
                reader.problems.append(f"{candidate} is outside {where}; not read")
                continue
            found += [f for f in reader.read(candidate, roots) if f[1]]
    return _render(found, project, home, bound, tuple(reader.problems))


WINDOW_SHARE = 0.25  # the most of the context window the instructions may take


@dataclass(frozen=True)
class Bound:
    """How many bytes of instructions a request may carry: ``instructions.max_bytes``, and a
    share of the model's context window when it is known; ``why`` names the setting."""

    max_bytes: int
    window: int | None = None

    @property
    def bytes(self) -> int:
        if self.window is None:
            return self.max_bytes
        return max(min(self.max_bytes, int(self.window * WINDOW_SHARE)), 0)

    @property
    def why(self) -> str:
        if self.bytes == self.max_bytes:
            return "instructions.max_bytes"
        return (f"a quarter of the model's {self.window:,}-token context window; "
                f"instructions.max_bytes is {self.max_bytes:,}")


def _render(found: Sequence[tuple[Path, str, Path | None]], cwd: Path, home: Path,
            bound: Bound, problems: tuple[str, ...]) -> Instructions:
    """The text of the files ``found``, cut at the ``bound`` (with a line saying so)."""
    max_bytes = bound.bytes
    if not found:
        return Instructions(problems=problems)
    parts, sources, used = [HEADING], [], len(HEADING.encode())
    cut = None
    for i, (path, text, parent) in enumerate(found):
        name = shown(path, cwd, home)
        where = f" (included by {shown(parent, cwd, home)})" if parent is not None else ""
        section = f"\n\n## {name}{where}\n\n{text}"
        size = len(section.encode())
        if used + size > max_bytes:
            room = max(max_bytes - used, 0)
            kept = section.encode()[:room].decode("utf-8", errors="ignore")
            kept = kept[:kept.rfind("\n") + 1].rstrip() if "\n" in kept else ""
            left = [shown(p, cwd, home) for p, _, _ in found[i + 1:]]
            cut = (f"[rollchat: project instructions cut at {max_bytes:,} bytes "
                   f"({bound.why}): the rest of {name}"
                   + (f" and {', '.join(left)}" if left else "") + " left out]")
            if kept.strip():
                parts.append(kept)
                sources.append(Source(path, len(kept.encode()), parent))
            parts.append("\n\n" + cut)
            break
        parts.append(section)
        sources.append(Source(path, size, parent))
        used += size
    return Instructions("".join(parts), tuple(sources), cut, problems)
