"""Saved prompts typed as commands (``/NAME args``): the markdown files of rollchat, Claude Code,
Codex and basic-agent-chat-loop, found in a fixed order, their front matter read and their
``$ARGUMENTS`` / ``$1``..``$9`` filled in. Project files follow the trust rule (config.trust)."""

from __future__ import annotations

import hashlib
import re
import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from rollchat.config.trust import TRUST_COMMAND, TrustCheck

MAX_BYTES = 64 * 1024  # a prompt longer than this is not a saved prompt
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
_FRONT = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)", re.DOTALL)
_PLACEHOLDER = re.compile(r"\$(ARGUMENTS|[1-9])")
# Claude Code's bash execution: !`command` runs before the prompt is sent, its output in its
# place (only with ``allowed-tools`` naming Bash; see session/saved_prompt.py)
COMMAND = re.compile(r"!`([^`\n]+)`")
# front matter keys Claude Code documents that rollchat has nothing to do with: said once
_IGNORED_KEYS = ("disable-model-invocation", "argument_hint")
_KNOWN_KEYS = ("description", "argument-hint", "model", "allowed-tools")


@dataclass(frozen=True)
class Place:
    """A directory saved prompts are read from: the path, how it is shown, and whether it is
    the project's (its files' ``allowed-tools`` then apply only once trusted)."""

    path: Path
    display: str
    project: bool = False


def places(cwd: Path, home: Path, user_config_dir: Path) -> tuple[Place, ...]:
    """Where saved prompts are looked for, first found first: the project's (rollchat's, then
    Claude Code's), then the user's (rollchat's, Claude Code's, Codex's, ~/.prompts)."""
    return (Place(cwd / ".rollchat" / "commands", ".rollchat/commands", project=True),
            Place(cwd / ".claude" / "commands", ".claude/commands", project=True),
            Place(user_config_dir / "commands", str(user_config_dir / "commands")),
            Place(home / ".claude" / "commands", "~/.claude/commands"),
            Place(home / ".codex" / "prompts", "~/.codex/prompts"),
            Place(home / ".prompts", "~/.prompts"))


@dataclass(frozen=True)
class SavedPrompt:
    """One saved prompt: its command name, file, front matter and body. ``allowed`` holds the
    ``allowed-tools`` rollchat can apply (its own tool names and globs), ``notes`` what it
    cannot honour (said when the prompt is used)."""

    name: str
    path: Path
    display: str
    body: str
    description: str = ""
    argument_hint: str = ""
    model: str | None = None
    allowed: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    bash: tuple[str, ...] = ()  # the ``Bash``/``Bash(...)`` rules of its allowed-tools
    trusted: bool = True  # the user's own file, or a project file the user trusted

    @property
    def commands(self) -> tuple[str, ...]:
        """The ``!`command``` of the prompt file, as written (before any argument)."""
        return tuple(m[1] for m in COMMAND.finditer(self.body))

    def parts(self, args: str) -> list[tuple[str, str]]:
        """The prompt filled with ``args`` (see ``expand``) as ("text", ...) and ("command",
        ...) pieces: the commands are the file's own ``!`...```, found before the arguments
        are filled in, so an argument can never make one."""
        pieces: list[tuple[str, str]] = []
        at = 0
        for m in COMMAND.finditer(self.body):
            pieces += [("text", self.body[at:m.start()]), ("command", m[1])]
            at = m.end()
        pieces.append(("text", self.body[at:]))
        filled = [(kind, self._fill(text, args)) for kind, text in pieces]
        if _PLACEHOLDER.search(self.body) is None and args.strip():
            filled.append(("text", f"\n\n{args.strip()}"))
        kind, last = filled[-1]
        filled[-1] = (kind, last.rstrip() if kind == "text" else last)
        return filled

    def expand(self, args: str) -> str:
        """The prompt with ``args`` filled in: ``$ARGUMENTS`` is all of them, ``$1``..``$9``
        each one (split as a shell splits words; missing ones are empty). Arguments given to a
        prompt that uses none are added after it, never dropped."""
        if _PLACEHOLDER.search(self.body) is None:
            args = args.strip()
            return f"{self.body.rstrip()}\n\n{args}" if args else self.body.rstrip()
        return self._fill(self.body, args).rstrip()

    @staticmethod
    def _fill(text: str, args: str) -> str:
        args = args.strip()
        try:
            words = shlex.split(args)
        except ValueError:  # an unclosed quote: split on spaces
            words = args.split()

        def fill(m: re.Match[str]) -> str:
            if m[1] == "ARGUMENTS":
                return args
            index = int(m[1]) - 1
            return words[index] if index < len(words) else ""

        return _PLACEHOLDER.sub(fill, text)


@dataclass(frozen=True)
class SavedPrompts:
    """The saved prompts found (name -> prompt, the first found of each name) and the lines
    to tell the user once: a name a built-in command takes, files that could not be read."""

    commands: Mapping[str, SavedPrompt] = field(default_factory=dict)
    notes: tuple[str, ...] = ()

    def find(self, word: str) -> SavedPrompt | None:
        """The prompt ``word`` names: exactly, else the one name equal ignoring case."""
        found = self.commands.get(word)
        if found is not None:
            return found
        folded = [p for n, p in self.commands.items() if n.casefold() == word.casefold()]
        return folded[0] if len(folded) == 1 else None


def load_saved_prompts(where: tuple[Place, ...], builtins: frozenset[str],
                       trust: Callable[[Path], TrustCheck] | None = None) -> SavedPrompts:
    """Every saved prompt in ``where`` (the first of each name wins); a name in ``builtins``
    is reported once and left to the built-in. ``trust``: the trust check of a project file
    (None: project files are never trusted)."""
    found: dict[str, SavedPrompt] = {}
    notes: list[str] = []
    shadowed: dict[str, str] = {}  # name (as the built-in) -> the first file that has it
    for place in where:
        try:
            files = sorted(p for p in place.path.glob("*.md") if p.is_file())
        except OSError:
            continue
        for path in files:
            name = path.stem
            if NAME.fullmatch(name) is None or name in found:
                continue
            if name.lower() in builtins:
                shadowed.setdefault(name.lower(), f"/{name} ({place.display}/{path.name})")
                continue
            prompt = _read(path, name, place, trust, notes)
            if prompt is not None:
                found[name] = prompt
    if shadowed:
        many = len(shadowed) > 1
        taken = "built-in commands take those names" if many else \
            "a built-in command takes that name"
        names = ", ".join(shadowed.values())
        notes.append(f"saved prompt{'s' if many else ''} {names} not available: {taken}; "
                     "rename the file to use it")
    return SavedPrompts(found, tuple(notes))


def _read(path: Path, name: str, place: Place, trust: Callable[[Path], TrustCheck] | None,
          notes: list[str]) -> SavedPrompt | None:
    display = f"{place.display}/{path.name}"
    try:
        data = path.read_bytes()[:MAX_BYTES + 1]
        if len(data) > MAX_BYTES:
            notes.append(f"{display}: larger than {MAX_BYTES // 1024} KiB, not a saved prompt")
            return None
        text = data.decode("utf-8").lstrip("\ufeff")
    except OSError as exc:
        notes.append(f"{display}: cannot be read ({exc.strerror or exc})")
        return None
    except UnicodeDecodeError:
        notes.append(f"{display}: not UTF-8 text, not a saved prompt")
        return None
    meta, body, problem = _front_matter(text)
    if problem is not None:
        notes.append(f"{display}: {problem}; its front matter is ignored")
    untrusted = place.project and (trust is None or trust(path)(
        hashlib.sha256(data).hexdigest()) is not None)
    return _prompt(name, path, display, body, meta, untrusted)


def _front_matter(text: str) -> tuple[dict[str, object], str, str | None]:
    """The front matter between ``---`` lines, the body, and what was wrong with the front
    matter (None when nothing was). Read as Claude Code writes it, ``key: value`` lines with
    the value as written (``argument-hint: [file] [focus]`` is text, not YAML), and ``- item``
    lines making a list of the key before them."""
    m = _FRONT.match(text)
    if m is None:
        return {}, text, None
    body = text[m.end():]
    meta: dict[str, str | list[str]] = {}
    key = None
    for number, line in enumerate(m[1].splitlines(), start=2):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        item = re.fullmatch(r"\s+-\s+(.*)|-\s+(.*)", line)
        pair = re.fullmatch(r"([A-Za-z][A-Za-z0-9_-]*)\s*:(?:\s+(.*))?", line.rstrip())
        listed = meta.get(key) if key is not None else None
        if item is not None and isinstance(listed, list):
            listed.append(_unquoted(item[1] if item[1] is not None else item[2]))
        elif pair is not None:
            key = pair[1]
            meta[key] = _unquoted(pair[2]) if pair[2] else []
        else:
            return {}, body, f"line {number} of the front matter is not 'key: value'"
    return {k: v if v != [] else "" for k, v in meta.items()}, body, None


def _unquoted(value: str) -> str:
    value = value.strip()
    if len(value) > 1 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value


def _prompt(name: str, path: Path, display: str, body: str, meta: dict[str, object],
            untrusted: bool) -> SavedPrompt:
    notes: list[str] = []
    description = _string(meta.get("description")) or _first_line(body)
    model = _string(meta.get("model")) or None  # answers the prompt's turn (ChatApp)
    allowed: list[str] = []
    bash: list[str] = []
    tools = meta.get("allowed-tools")
    if tools is not None:
        rules = _tool_list(tools)
        if COMMAND.search(body) is not None:  # Bash rules: what its !`commands` may run
            bash = [r for r in rules if re.fullmatch(r"Bash(\(.*\))?", r)]
        claude = [r for r in rules if not _ours(r) and r not in bash]
        allowed = [r for r in rules if _ours(r)]
        if claude:
            notes.append(f"{display}: allowed-tools {', '.join(claude)} not applied "
                         "(Claude Code's tools; rollchat's tools have other names)")
        if allowed and untrusted:
            notes.append(f"{display}: allowed-tools {', '.join(allowed)} not applied: the "
                         f"project's file is not trusted (`{TRUST_COMMAND} {display}`)")
            allowed = []
    unknown = [k for k in meta if k not in _KNOWN_KEYS and k not in _IGNORED_KEYS]
    if unknown:
        notes.append(f"{display}: front matter {', '.join(unknown)} not used by rollchat")
    return SavedPrompt(name, path, display, body, description=description,
                       argument_hint=_string(meta.get("argument-hint")), model=model,
                       allowed=tuple(allowed), notes=tuple(notes), bash=tuple(bash),
                       trusted=not untrusted)


def _string(value: object) -> str:
    if value is None:
        return ""
    return " ".join(str(value).split())


def _first_line(body: str) -> str:
    """A prompt without a description is described by its first line of text."""
    for line in body.splitlines():
        text = line.strip().lstrip("#").strip()
        if text:
            return text[:80] + ("…" if len(text) > 80 else "")
    return ""


def _tool_list(value: object) -> list[str]:
    """``allowed-tools`` as a list: a YAML list, or Claude Code's comma-separated string
    (commas inside parentheses belong to the rule)."""
    if isinstance(value, list):
        return [_string(v) for v in value if _string(v)]
    rules, depth, start, text = [], 0, 0, str(value)
    for i, ch in enumerate(text + ","):
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if ch == "," and depth <= 0:
            if text[start:i].strip():
                rules.append(text[start:i].strip())
            start = i + 1
    return rules


def _ours(rule: str) -> bool:
    """Whether ``rule`` can be a rollchat tool name or glob (Claude Code's ``Bash(git:*)``
    and its capitalized tools cannot)."""
    from rollchat.config.claude_settings import CLAUDE_TOOLS

    return "(" not in rule and rule not in CLAUDE_TOOLS and re.fullmatch(
        r"[A-Za-z0-9_.*?\[\]-]+", rule) is not None
