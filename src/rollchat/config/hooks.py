"""The ``hooks:`` setting: commands run at fixed points of a chat, in Claude Code's shape (event
-> list of {matcher, hooks: [{type: command, command, timeout}]}), each checked with a clear
message. An untrusted project file's hooks are read but held: they never run."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rollchat.config.fields import Field, nonempty

if TYPE_CHECKING:  # (imported where a YAML file is read: what reads only HookConfig, Claude
    import yaml  # Code's settings.json on every command, does without the YAML parser)

    from rollchat.config.document import Doc

HOOK_EVENTS = ("SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "PreCompact",
               "PostCompact", "SessionEnd", "Stop", "Notification")
# what each event's matcher is matched against (Claude Code's): the tool's name, how the
# compaction or the session started, why the session ended; UserPromptSubmit has none
MATCHED = {"PreToolUse": "tool name", "PostToolUse": "tool name", "PreCompact": "trigger",
           "PostCompact": "trigger", "SessionStart": "source", "SessionEnd": "reason"}
DEFAULT_TIMEOUT = 60.0  # seconds, as in Claude Code
_ENTRY_KEYS = ("matcher", "hooks", "command", "timeout")
_HOOK_KEYS = ("type", "command", "timeout")
_COMMAND = Field("str", "must be a shell command (a non-empty string)", nonempty)
_TIMEOUT = Field("float", "must be a number of seconds > 0", lambda v: v > 0, cap=3600.0)
_MATCHER = Field("str", "must be a regular expression (\"\" or \"*\": everything), or null",
                 nullable=True)


@dataclass(frozen=True)
class HookConfig:
    """One command run at ``event``: when ``matcher`` (a regular expression matched against
    the whole tool name, trigger, source or reason; None: always) matches, with ``timeout``
    seconds to finish. ``origin``: the file and line it was set on (for its messages)."""

    event: str
    command: str
    matcher: str | None = None
    timeout: float = DEFAULT_TIMEOUT
    origin: str = ""

    def matches(self, value: str | None) -> bool:
        if self.matcher is None or value is None:
            return True
        return re.fullmatch(self.matcher, value) is not None


def read_hooks(doc: Doc, node: yaml.Node) -> tuple[HookConfig, ...]:
    """The hooks of the ``hooks:`` mapping at ``node`` (ConfigError naming the key on a
    mistake)."""
    import yaml

    from rollchat.config.document import describe_node, unknown_key

    out: list[HookConfig] = []
    for event, (knode, vnode) in doc.items(node, "hooks").items():
        if event not in HOOK_EVENTS:
            raise doc.error(knode, f"hooks.{event}", "unknown hook event" + unknown_key(
                event, HOOK_EVENTS).removeprefix("unknown key"))
        if isinstance(vnode, yaml.ScalarNode) and vnode.tag.endswith(":null"):
            continue
        if not isinstance(vnode, yaml.SequenceNode):
            raise doc.error(vnode, f"hooks.{event}", "must be a list of {matcher, hooks} "
                            f"entries (got {describe_node(vnode)})")
        for i, entry in enumerate(vnode.value):
            out += _entry(doc, event, entry, f"hooks.{event}[{i}]")
    return tuple(out)


def _entry(doc: Doc, event: str, node: yaml.Node, key: str) -> list[HookConfig]:
    import yaml

    from rollchat.config.document import describe_node, unknown_key

    entries = doc.items(node, key)
    for name, (knode, _) in entries.items():
        if name not in _ENTRY_KEYS:
            raise doc.error(knode, f"{key}.{name}", unknown_key(name, _ENTRY_KEYS))
    matcher = None
    if "matcher" in entries:
        matcher = _matcher(doc, event, entries["matcher"][1], f"{key}.matcher")
    origin = f"{doc.display}:{node.start_mark.line + 1}"
    if "command" in entries:  # the short form: the command on the entry itself
        if "hooks" in entries:
            raise doc.error(node, key, "set hooks (a list of commands) or command, not both")
        return [_hook(doc, event, matcher, entries, key, origin)]
    if "hooks" not in entries:
        raise doc.error(node, key, "needs hooks: a list of {type: command, command, timeout}")
    hooks = entries["hooks"][1]
    if not isinstance(hooks, yaml.SequenceNode) or not hooks.value:
        raise doc.error(hooks, f"{key}.hooks", "must be a non-empty list of {type: command, "
                        f"command, timeout}} (got {describe_node(hooks)})")
    out = []
    for i, item in enumerate(hooks.value):
        where = f"{key}.hooks[{i}]"
        items = doc.items(item, where)
        for name, (knode, _) in items.items():
            if name not in _HOOK_KEYS:
                raise doc.error(knode, f"{where}.{name}", unknown_key(name, _HOOK_KEYS))
        if "type" in items:
            kind = doc.scalar(items["type"][1], f"{where}.type", Field("str", "must be command"))
            if kind != "command":
                raise doc.error(items["type"][1], f"{where}.type", f"must be command (got "
                                f"{kind!r}: rollchat runs commands only, not prompt hooks)")
        out.append(_hook(doc, event, matcher, items, where,
                         f"{doc.display}:{item.start_mark.line + 1}"))
    return out


def _hook(doc: Doc, event: str, matcher: str | None,
          items: dict[str, tuple[yaml.Node, yaml.Node]], key: str, origin: str) -> HookConfig:
    if "command" not in items:
        raise doc.error(None, key, "needs command: the shell command to run")
    command = doc.scalar(items["command"][1], f"{key}.command", _COMMAND)
    timeout = DEFAULT_TIMEOUT
    if "timeout" in items:
        timeout = doc.scalar(items["timeout"][1], f"{key}.timeout", _TIMEOUT)
    return HookConfig(event, command, matcher, timeout, origin)


def _matcher(doc: Doc, event: str, node: yaml.Node, key: str) -> str | None:
    value = doc.scalar(node, key, _MATCHER)
    if value is None or value in ("", "*"):
        return None
    if event not in MATCHED:
        raise doc.error(node, key, f"{event} hooks have no matcher (they run for every "
                        "message)")
    try:
        re.compile(value)
    except re.error as exc:
        raise doc.error(node, key, f"not a regular expression: {exc}") from None
    return str(value)
