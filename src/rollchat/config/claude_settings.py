"""Claude Code's settings carried over: the ``hooks`` and ``permissions`` of
``~/.claude/settings.json`` (the user's) and ``./.claude/settings.json`` (a project's, under the
same trust rule as rollchat.yml), mapped to rollchat's hooks and allow/deny rules; what rollchat
cannot honour is one line each, never a silent skip nor a refusal of the whole file."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rollchat.config.hooks import DEFAULT_TIMEOUT, HOOK_EVENTS, HookConfig
from rollchat.config.trust import TRUST_COMMAND, TrustCheck

SETTINGS = Path(".claude") / "settings.json"
MAX_BYTES = 256 * 1024
MAX_TIMEOUT = 3600.0
# Claude Code's own tools: rollchat has none of these names, so a rule for one means nothing
CLAUDE_TOOLS = frozenset({"Bash", "Read", "Edit", "Write", "MultiEdit", "NotebookEdit", "Glob",
                          "Grep", "LS", "WebFetch", "WebSearch", "Task", "TodoWrite",
                          "NotebookRead", "BashOutput", "KillShell", "SlashCommand", "Agent"})
_RULE = re.compile(r"([A-Za-z0-9_.*-]+)(?:\((.*)\))?", re.DOTALL)
# the keys rollchat reads; any other key of the file is Claude Code's alone (model, env,
# statusLine...) and is named once, in one line, so nothing is dropped unseen
_READ = ("hooks", "permissions", "$schema")
_PERMISSION_KEYS = ("allow", "deny", "ask")


@dataclass(frozen=True)
class ClaudeSettings:
    """What one settings.json gives rollchat: hooks, allow and deny rules (rollchat's tool
    names and globs), and the lines saying what it could not honour or held."""

    hooks: tuple[HookConfig, ...] = ()
    allow: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    sha256: str | None = None


def read_settings(path: Path, display: str, trust: TrustCheck | None = None) -> ClaudeSettings:
    """The settings at ``path`` (an empty result when there is none); ``trust``: for a
    project's file, None when trusted (see config.trust). A file that cannot be read or is not
    JSON is one line, and nothing of it applies."""
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_BYTES + 1)
    except FileNotFoundError:
        return ClaudeSettings()
    except OSError as exc:
        return ClaudeSettings(notes=(f"{display}: cannot read it ({exc.strerror or exc}); "
                                     "its hooks and permissions are not used",))
    sha = hashlib.sha256(data).hexdigest()
    if len(data) > MAX_BYTES:
        return ClaudeSettings(notes=(f"{display}: over 256 KiB; its hooks and permissions "
                                     "are not used",), sha256=sha)
    try:
        raw = json.loads(data.decode("utf-8-sig"))
    except (UnicodeDecodeError, ValueError) as exc:
        return ClaudeSettings(notes=(f"{display}: not valid JSON ({exc}); its hooks and "
                                     "permissions are not used",), sha256=sha)
    if not isinstance(raw, dict):
        return ClaudeSettings(notes=(f"{display}: not a JSON object; not used",), sha256=sha)
    untrusted = trust(sha) if trust is not None else None
    reader = _Reader(display)
    hooks = reader.hooks(raw.get("hooks"))
    allow, deny = reader.permissions(raw.get("permissions"))
    others = sorted(k for k in raw if k not in _READ)
    if others:
        reader.notes.append(f"{display}: {', '.join(others)} {_are(others)} Claude Code's "
                            "alone; rollchat uses only hooks and permissions")
    if untrusted is not None and (hooks or allow):
        held = (["hooks"] if hooks else []) + (["permissions.allow"] if allow else [])
        reader.notes.append(f"{display} {untrusted.reason}, so these are ignored: "
                            f"{', '.join(held)} (they run commands or let tools run unasked); "
                            f"if you trust the file, run `{TRUST_COMMAND} {display}`")
        hooks, allow = (), ()
    return ClaudeSettings(hooks, allow, deny, tuple(reader.notes), sha)


def _are(items: list[str]) -> str:
    return "is" if len(items) == 1 else "are"


class _Reader:
    """One file's hooks and rules, each problem one line in ``notes``."""

    def __init__(self, display: str) -> None:
        self.display = display
        self.notes: list[str] = []

    def note(self, key: str, why: str) -> None:
        self.notes.append(f"{self.display}: {key}: {why}")

    def hooks(self, raw: Any) -> tuple[HookConfig, ...]:
        if raw is None:
            return ()
        if not isinstance(raw, dict):
            self.note("hooks", "not an object of events; not used")
            return ()
        out: list[HookConfig] = []
        for event, entries in raw.items():
            if event not in HOOK_EVENTS:
                self.note(f"hooks.{event}", "an event rollchat does not have (it has "
                          f"{', '.join(HOOK_EVENTS)}); not run")
                continue
            if not isinstance(entries, list):
                self.note(f"hooks.{event}", "not a list of {matcher, hooks}; not run")
                continue
            for i, entry in enumerate(entries):
                out += self._entry(event, entry, f"hooks.{event}[{i}]")
        return tuple(out)

    def _entry(self, event: str, entry: Any, key: str) -> list[HookConfig]:
        if not isinstance(entry, dict) or not isinstance(entry.get("hooks"), list):
            self.note(key, "not {matcher, hooks: [...]}; not run")
            return []
        matcher = entry.get("matcher")
        if matcher in ("", "*", None):
            matcher = None
        elif not isinstance(matcher, str) or not _compiles(matcher):
            self.note(f"{key}.matcher", f"not a regular expression ({matcher!r}); not run")
            return []
        out = []
        for j, hook in enumerate(entry["hooks"]):
            where = f"{key}.hooks[{j}]"
            if not isinstance(hook, dict):
                self.note(where, "not an object; not run")
                continue
            kind, command = hook.get("type", "command"), hook.get("command")
            if kind != "command":
                self.note(where, f"a {kind!r} hook; rollchat runs command hooks only")
                continue
            if not isinstance(command, str) or not command.strip():
                self.note(where, "has no command; not run")
                continue
            timeout = hook.get("timeout", DEFAULT_TIMEOUT)
            if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) \
                    or not 0 < timeout <= MAX_TIMEOUT:
                self.note(f"{where}.timeout", f"must be a number of seconds from 0 to "
                          f"{MAX_TIMEOUT:,.0f} (got {timeout!r}); the default "
                          f"{DEFAULT_TIMEOUT:.0f} s is used")
                timeout = DEFAULT_TIMEOUT
            out.append(HookConfig(event, command, matcher, float(timeout),
                                  f"{self.display} {where}"))
        return out

    def permissions(self, raw: Any) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(allow, deny) as rollchat's rules. ``ask`` is what rollchat does for every tool no
        rule allows (approval: ask), so an ask rule is honoured by not being allowed."""
        if raw is None:
            return (), ()
        if not isinstance(raw, dict):
            self.note("permissions", "not an object; not used")
            return (), ()
        rules: dict[str, list[str]] = {name: [] for name in _PERMISSION_KEYS}
        for name, value in raw.items():
            if name not in _PERMISSION_KEYS:
                self.note(f"permissions.{name}", "a Claude Code setting rollchat has no "
                          "counterpart for; not used")
                continue
            if not isinstance(value, list):
                self.note(f"permissions.{name}", "not a list of rules; not used")
                continue
            for rule in value:
                mapped = self._rule(f"permissions.{name}", rule)
                if mapped is not None:
                    rules[name].append(mapped)
        asked = set(rules["ask"])
        return tuple(r for r in rules["allow"] if r not in asked), tuple(rules["deny"])

    def _rule(self, key: str, rule: Any) -> str | None:
        """One rule as a rollchat tool name or glob, or None (said in a line)."""
        match = _RULE.fullmatch(rule) if isinstance(rule, str) else None
        if match is None:
            self.note(key, f"{rule!r} is not a tool rule; not used")
            return None
        tool, argument = match.group(1), match.group(2)
        if argument is not None and argument not in ("", "*"):
            self.note(key, f"{rule!r}: rollchat's rules match whole tools, not their "
                      "arguments; not used")
            return None
        if tool in CLAUDE_TOOLS:
            self.note(key, f"{rule!r}: {tool} is Claude Code's own tool, which rollchat does "
                      "not have; not used")
            return None
        if tool.startswith("mcp__") and tool.count("__") == 1:
            return f"{tool}__*"  # mcp__server: every tool of the server, as in Claude Code
        return tool


def _compiles(pattern: str) -> bool:
    try:
        re.compile(pattern)
    except re.error:
        return False
    return True
