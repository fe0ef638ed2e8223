"""The config YAML document read with line numbers: mappings (duplicates and merges), scalars
and lists checked against their Field, and errors that name the file, the line and the key."""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml

from rollchat.config.fields import Field, coerce, nonempty, over_cap, show_value
from rollchat.config.trust import Untrusted
from rollchat.errors import ConfigError

_KEY_HINT = (
    "API keys are never read from the config file: set ANTHROPIC_API_KEY or OPENAI_API_KEY "
    "in the environment, or name your own variable with api_key_env"
)
_SECRET_NAMES = ("key", "token", "apitoken", "accesstoken", "authtoken", "bearertoken")
_SECRET_WORDS = ("apikey", "secret", "password", "credential")


class Doc:
    """The config file being read: its display name, its directory and a scalar constructor."""

    def __init__(self, display: str, base_dir: Path, untrusted: Untrusted | None = None) -> None:
        self.display = display
        self.base_dir = base_dir
        self.loader = yaml.SafeLoader("")
        self.untrusted = untrusted  # a project file not trusted: some settings are ignored
        self.ignored: list[str] = []  # the dotted keys ignored for that reason

    def error(self, node: yaml.Node | None, key: str, msg: str) -> ConfigError:
        where = f"{self.display}:{node.start_mark.line + 1}" if node is not None else self.display
        return ConfigError(f"{where}: {key}: {msg}" if key else f"{where}: {msg}")

    def items(self, node: yaml.Node, key: str) -> dict[str, tuple[yaml.Node, yaml.Node]]:
        """The entries of a mapping node by name (null counts as empty); merges resolved."""
        if isinstance(node, yaml.ScalarNode) and node.tag == "tag:yaml.org,2002:null":
            return {}
        if not isinstance(node, yaml.MappingNode):
            raise self.error(node, key, f"must be a mapping (got {describe_node(node)})")
        seen: dict[str, yaml.Node] = {}
        for knode, _ in node.value:
            if not isinstance(knode, yaml.ScalarNode) or knode.tag.endswith(":merge"):
                continue
            if knode.value in seen:
                first = seen[knode.value].start_mark.line + 1
                raise self.error(knode, dotted_key(key, knode.value),
                                 f"duplicate key (first set on line {first})")
            seen[knode.value] = knode
        try:
            self.loader.flatten_mapping(node)
        except yaml.YAMLError as exc:
            raise self.error(node, key, f"invalid merge: {getattr(exc, 'problem', exc)}") from None
        out: dict[str, tuple[yaml.Node, yaml.Node]] = {}
        for knode, vnode in node.value:
            if not isinstance(knode, yaml.ScalarNode):
                raise self.error(knode, key,
                                 f"keys must be plain names (got {describe_node(knode)})")
            out[knode.value] = (knode, vnode)
        return out

    def scalar(self, node: yaml.Node, key: str, spec: Field) -> Any:
        """The checked value of a scalar node, or a ConfigError naming the rule."""
        if not isinstance(node, yaml.ScalarNode):
            raise self.error(node, key, f"{spec.need} (got {describe_node(node)})")
        try:
            value = self.loader.construct_object(node, deep=True)
        except (yaml.YAMLError, ValueError, TypeError, OverflowError) as exc:
            reason = getattr(exc, "problem", None) or str(exc)
            raise self.error(node, key, f"{spec.need} (got an invalid value: {reason})") from None
        good, converted = coerce(spec, value)
        if not good:
            raise self.error(node, key, f"{spec.need} (got {show_value(value)})")
        too_big = over_cap(spec, converted)
        if too_big is not None:
            raise self.error(node, key, too_big)
        return converted

    def names(self, node: yaml.Node, key: str, spec: Field) -> tuple[str, ...]:
        """A list of non-empty strings (tool names or globs)."""
        if not isinstance(node, yaml.SequenceNode):
            raise self.error(node, key, f"{spec.need} (got {describe_node(node)})")
        out = []
        for item in node.value:
            value = self.scalar(item, key, Field("str", spec.need, nonempty))
            out.append(value)
        return tuple(out)

    def fields(self, node: yaml.Node, key: str, specs: Mapping[str, Field],
               skip: Iterable[str] = (),
               entries: Mapping[str, tuple[yaml.Node, yaml.Node]] | None = None,
               ) -> tuple[dict[str, Any], dict[str, yaml.Node]]:
        """Read a mapping of known fields: (values, value nodes). Unknown keys are errors;
        the keys in ``skip`` are read by someone else (``entries``: the mapping's items,
        when the caller read them already)."""
        values: dict[str, Any] = {}
        nodes: dict[str, yaml.Node] = {}
        for name, (knode, vnode) in (self.items(node, key) if entries is None
                                      else entries).items():
            if name in skip:
                continue
            if name not in specs:
                raise self.error(knode, dotted_key(key, name), unknown_key(name, specs))
            values[name] = (self.names(vnode, dotted_key(key, name), specs[name])
                            if specs[name].kind == "list"
                            else self.scalar(vnode, dotted_key(key, name), specs[name]))
            nodes[name] = vnode
        return values, nodes


def dotted_key(prefix: str, name: str) -> str:
    return f"{prefix}.{name}" if prefix else name


def describe_node(node: yaml.Node) -> str:
    if isinstance(node, yaml.MappingNode):
        return "a mapping"
    if isinstance(node, yaml.SequenceNode):
        return "a list"
    return repr(str(node.value)[:40])


def unknown_key(name: str, known: Iterable[str]) -> str:
    squashed = re.sub(r"[^a-z]", "", name.lower())
    if squashed in _SECRET_NAMES or any(w in squashed for w in _SECRET_WORDS):
        return f"unknown key; {_KEY_HINT}"
    close = difflib.get_close_matches(name, list(known), n=1, cutoff=0.6)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return f"unknown key{hint}; known keys: {', '.join(known)}"
