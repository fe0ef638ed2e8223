"""Reading a config file's YAML with bounds: its size, its nesting, its number of values and
aliases, and what its merge keys (``<<``) expand to, all checked before anything is expanded,
so a hostile file costs milliseconds, not gigabytes. Errors name the file and the line."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from rollchat.errors import ConfigError

MAX_FILE_BYTES = 256 * 1024  # a full config is a few KB; long prompts go in system_prompt_file
MAX_DEPTH = 32  # nesting levels; a valid config needs 4
MAX_NODES = 10_000  # values (scalars, lists, mappings); the example config has about 150
MAX_ALIASES = 100  # *name references
MAX_MERGED = 5_000  # mapping entries, all mappings together, once merge keys are expanded
_MERGE_TAG = "tag:yaml.org,2002:merge"


@dataclass(frozen=True)
class RawFile:
    """A config file's text and the SHA-256 of the bytes it was decoded from (what trust
    records: the hash is of exactly the bytes that were parsed)."""

    text: str
    sha256: str


def read_capped(path: Path, limit: int) -> bytes | None:
    """The file's bytes, or None when it holds more than ``limit`` (never reading more than
    that). OSError as raised."""
    with path.open("rb") as handle:
        data = handle.read(limit + 1)
    return data if len(data) <= limit else None


def read_config_bytes(path: Path, display: str) -> bytes:
    """The file's bytes, or a ConfigError for a directory, an unreadable or a huge file."""
    try:
        if path.is_dir():
            raise ConfigError(f"{display}: is a directory, not a config file")
        data = read_capped(path, MAX_FILE_BYTES)
    except OSError as exc:
        raise ConfigError(f"{display}: cannot read: {exc.strerror or exc}") from None
    if data is None:
        raise ConfigError(f"{display}: too large for a config file (limit {MAX_FILE_BYTES // 1024}"
                          " KiB); put a long system prompt in system_prompt_file")
    return data


def read_text(path: Path, display: str) -> RawFile:
    """The file's text and hash, or a ConfigError (see read_config_bytes; or not UTF-8)."""
    data = read_config_bytes(path, display)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise ConfigError(f"{display}:{line}: not valid UTF-8 (byte 0x{data[exc.start]:02x}); "
                          "save the file as UTF-8") from None
    return RawFile(text, hashlib.sha256(data).hexdigest())


class _Limit(Exception):
    """A bound was passed while composing: the message and the line (1-based)."""

    def __init__(self, line: int, message: str) -> None:
        super().__init__(message)
        self.line = line


class _BoundedLoader(yaml.SafeLoader):
    """The safe loader's composer, counting nodes, aliases and depth as it goes."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.nodes = 0
        self.aliases = 0
        self.depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        event = self.peek_event()  # type: ignore[no-untyped-call]
        line = event.start_mark.line + 1 if event.start_mark else 1
        if isinstance(event, yaml.AliasEvent):
            self.aliases += 1
            if self.aliases > MAX_ALIASES:
                raise _Limit(line, f"more than {MAX_ALIASES} aliases (*name); a config file "
                                   "needs only a few: write the settings out")
        else:
            self.nodes += 1
            if self.nodes > MAX_NODES:
                raise _Limit(line, f"more than {MAX_NODES:,} values; a config file needs a few "
                                   "hundred at most")
        self.depth += 1
        try:
            if self.depth > MAX_DEPTH:
                raise _Limit(line, f"nested more than {MAX_DEPTH} levels deep")
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1


def compose(text: str, display: str) -> yaml.Node | None:
    """The YAML node tree (None for an empty document) within the bounds above, with its merge
    keys checked (``check_merges``); every error names the line."""
    loader: _BoundedLoader | None = None
    try:
        loader = _BoundedLoader(text)  # the reader checks the characters here
        root: yaml.Node | None = loader.get_single_node()
    except _Limit as exc:
        raise ConfigError(f"{display}:{exc.line}: {exc}") from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = f":{mark.line + 1}" if mark else ""
        what = ", ".join(str(p) for p in (exc.context, exc.problem) if p)
        raise ConfigError(f"{display}{line}: invalid YAML: {what}") from None
    except yaml.reader.ReaderError as exc:
        row = text[: exc.position].count("\n") + 1
        char = f"#x{exc.character:04x}" if isinstance(exc.character, int) else "a character"
        raise ConfigError(f"{display}:{row}: invalid YAML: {char} is not allowed "
                          f"({exc.reason})") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{display}: invalid YAML: {exc}") from None
    finally:
        if loader is not None:
            loader.dispose()
    if root is not None:
        check_merges(root, display)
    return root


def check_merges(root: yaml.Node, display: str) -> None:
    """Refuse a document whose merge keys would expand past MAX_MERGED mapping entries, or that
    merges a mapping into itself, before anything is expanded: the size of every mapping once
    flattened is computed from the sizes of the mappings it merges, each counted once."""
    sizes: dict[int, int] = {}
    open_: set[int] = set()
    total = 0

    def line(node: yaml.Node) -> int:
        return node.start_mark.line + 1 if node.start_mark else 1

    def flattened(node: yaml.MappingNode) -> int:
        nonlocal total
        key = id(node)
        if key in sizes:
            return sizes[key]
        if key in open_:
            raise ConfigError(f"{display}:{line(node)}: a merge key (<<) includes the mapping "
                              "it is in; remove that merge")
        open_.add(key)
        size = 0
        for knode, vnode in node.value:
            if knode.tag != _MERGE_TAG:
                size += 1
                continue
            merged = vnode.value if isinstance(vnode, yaml.SequenceNode) else [vnode]
            size += sum(flattened(m) for m in merged if isinstance(m, yaml.MappingNode))
        open_.discard(key)
        sizes[key] = size
        total += size
        if total > MAX_MERGED:
            raise ConfigError(f"{display}:{line(node)}: merge keys (<<) expand to more than "
                              f"{MAX_MERGED:,} settings; a config file needs far fewer: write "
                              "the settings out or merge less")
        return size

    seen: set[int] = set()
    todo = [root]
    while todo:  # every node once (aliases share nodes; a document may even contain cycles)
        node = todo.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, yaml.MappingNode):
            flattened(node)
            todo += [n for pair in node.value for n in pair]
        elif isinstance(node, yaml.SequenceNode):
            todo += node.value
