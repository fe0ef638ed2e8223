"""The config file layer: every key of the YAML document (read with bounds by config.yamlfile,
walked by config.document) checked against its Field, and a Config built over the defaults."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from typing import Any

import yaml

from rollchat.config.compaction import COMPACTION_FIELDS, HYGIENE_FIELD, CompactionSettings
from rollchat.config.document import Doc, describe_node, unknown_key
from rollchat.config.fields import (
    AUTO_COMPACT,
    BOOL,
    DELAY,
    MODEL,
    NONNEG,
    POSITIVE,
    PROVIDER,
    SECONDS,
    THINKING,
    URL,
    Field,
    capped,
    nonempty,
    resolve_path,
    show_value,
)
from rollchat.config.hooks import read_hooks
from rollchat.config.mcp_servers import (
    McpServerConfig,
    ServerProblem,
    check_server,
    read_servers_file,
)
from rollchat.config.settings import (
    EXIT_SUMMARIES,
    HANDOFF_STRATEGIES,
    MAX_INSTRUCTION_BYTES,
    OFFLINE_WORD_DELAY,
    ONE_SHOT_SUMMARIES,
    AgentConfig,
    Config,
    HandoffConfig,
    InstructionsConfig,
    MemoryConfig,
    ModelConfig,
    RetryConfig,
    SessionConfig,
    SummaryConfig,
    ToolsConfig,
    UIConfig,
)
from rollchat.config.trust import TRUSTED_ONLY, TrustCheck, confine, confine_model, notice
from rollchat.config.yamlfile import compose, read_text
from rollchat.errors import ConfigError
from rollchat.models.prices import Price

_MAX_PROMPT_BYTES = 1024 * 1024
# The caps of the size and time settings, whoever sets them (config.fields.Field.cap): far
# above any real use, low enough that no value can exhaust memory or hang a chat for days.
MAX_OUTPUT_TOKENS = 1_000_000
MAX_CONTEXT_WINDOW = 10_000_000  # the largest windows served today are 1-10 million tokens
MAX_SECONDS = 3600.0
_AGENT_KEY = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

# ---------------------------------------------------------------------------------------------
# The fields of each part of the file (the rules shared with the flags are in config.fields).

_AGENT_FIELDS: dict[str, Field] = {
    "name": Field("str", "must be a non-empty string", nonempty),
    "provider": PROVIDER,
    "model": MODEL,
    "base_url": URL,
    "concurrency": Field("int", "must be an integer >= 1 (requests at once to the server), "
                         "or null", lambda v: v >= 1, nullable=True, cap=64),
    "api_key_env": Field(
        "str", "must be the NAME of an environment variable (not the key), or null",
        lambda v: bool(_ENV_NAME.fullmatch(v)), nullable=True,
    ),
    "system_prompt": Field("str", "must be a string"),
    "system_prompt_file": Field("path", "must be a file path, or null", nonempty, nullable=True),
    "max_output_tokens": capped(POSITIVE, MAX_OUTPUT_TOKENS),
    "file": Field("path", "must be the path of an agent file (.py), or null", nonempty,
                  nullable=True),
    "approval": Field("str", "must be one of ask, auto, never",
                      lambda v: v in ("ask", "auto", "never")),
    "allow": Field("list", "must be a list of tool names or globs"),
    "deny": Field("list", "must be a list of tool names or globs"),
    "max_tool_rounds": capped(POSITIVE, 1000),
    "skills_dir": Field("path", "must be a folder path, or null", nonempty, nullable=True),
    "hygiene": HYGIENE_FIELD,
    "temperature": Field(
        "float", "must be a number from 0 to 2, or null", lambda v: 0 <= v <= 2, nullable=True
    ),
    "thinking": THINKING,
}
_MODEL_FIELDS = {
    "context_window": Field("int", "must be an integer >= 1024", lambda v: v >= 1024,
                            cap=MAX_CONTEXT_WINDOW),
    "price": Field("map", "must be a mapping: input, output, cached, cache_write"),
    "images": BOOL,
    "store": BOOL,
}
_DOLLARS = Field("float", "must be a number >= 0 (dollars per million tokens)",
                 lambda v: v >= 0)
_PRICE_FIELDS = {"input": _DOLLARS, "output": _DOLLARS, "cached": _DOLLARS,
                 "cache_write": _DOLLARS}
_SECTIONS: dict[str, tuple[type[Any], dict[str, Field]]] = {
    "session": (SessionConfig, {
        "dir": Field("path", "must be a directory path", nonempty),
        "auto_save": BOOL,
        "auto_compact": AUTO_COMPACT,
        "compact_threshold": Field(
            "float", "must be a number between 0 and 1", lambda v: 0 < v <= 1
        ),
        "safety_margin_tokens": capped(NONNEG, MAX_CONTEXT_WINDOW),
        "compact_every_turns": Field("int", "must be an integer >= 0 (0: off)", lambda v: v >= 0),
        "keep_recent_turns": NONNEG,
        "history": Field("str", "must be one of all, relevant (relevant forgoes prompt "
                         "caching)", lambda v: v in ("all", "relevant")),
    }),
    "summary": (SummaryConfig, {
        "provider": dataclasses.replace(PROVIDER, need=PROVIDER.need + ", or null",
                                       nullable=True),
        "model": MODEL,
        "max_words": capped(POSITIVE, 20_000),
        "timeout_seconds": capped(SECONDS, MAX_SECONDS),
        "one_shot": Field("str", "must be one of local, model",
                          lambda v: v in ONE_SHOT_SUMMARIES),
        "on_exit": Field("str", "must be one of auto, model, local, skip",
                         lambda v: v in EXIT_SUMMARIES),
    }),
    "retry": (RetryConfig, {
        "max_retries": capped(NONNEG, 100),
        "base_delay": capped(DELAY, MAX_SECONDS),
        "max_delay": capped(DELAY, MAX_SECONDS),
        "request_timeout": capped(SECONDS, MAX_SECONDS),
    }),
    "tools": (ToolsConfig, {
        "max_result_tokens": Field(
            "int", "must be an integer >= 100, or null (a tenth of the context window)",
            lambda v: v >= 100, nullable=True, cap=MAX_CONTEXT_WINDOW,
        ),
    }),
    "handoff": (HandoffConfig, {
        "strategy": Field("str", f"must be one of {', '.join(HANDOFF_STRATEGIES)}",
                          lambda v: v in HANDOFF_STRATEGIES),
        "last_n": capped(POSITIVE, 1000),
        "max_tokens": Field("int", "must be an integer >= 100", lambda v: v >= 100,
                            cap=MAX_CONTEXT_WINDOW),
    }),
    "ui": (UIConfig, {
        "history_file": Field("path", "must be a file path, or null", nonempty, nullable=True),
        "offline_word_delay": Field(
            "float", "must be a number of seconds from 0 to 10, or null (a short delay in a "
            "terminal, none when the output is piped)", lambda v: 0 <= v <= 10, nullable=True
        ),
        "notify_after_seconds": Field("float", "must be a number of seconds >= 0 (0: never)",
                                      lambda v: v >= 0, cap=24 * 3600),
    }),
    "instructions": (InstructionsConfig, {
        "enabled": BOOL,
        "files": Field("list", "must be a list of file names (AGENTS.md, CLAUDE.md, ...)"),
        "max_bytes": Field("int", "must be an integer >= 1024 (bytes)", lambda v: v >= 1024,
                           cap=MAX_INSTRUCTION_BYTES),
    }),
    "memory": (MemoryConfig, {
        "enabled": BOOL,
        "scope": Field("str", "must be project or user", lambda v: v in ("project", "user")),
        "idle_seconds": Field("float", "must be a number of seconds >= 0 (0: never)",
                              lambda v: v >= 0, cap=24 * 3600),
        "extract_timeout_seconds": Field("float", "must be a number of seconds >= 0 (0: the "
                                         "offline rules only)", lambda v: v >= 0,
                                         cap=MAX_SECONDS),
        "max_age_days": Field("int", "must be a positive number of days, or null (off)",
                              lambda v: v > 0, nullable=True),
        "max_share": Field("float", "must be a number between 0 and 0.5 (a share of the "
                                    "context window)", lambda v: 0 <= v <= 0.5),
        "user_dir": Field("path", "must be a directory path, or null", nonempty,
                          nullable=True),
        "dir": Field("path", "must be a directory path, or null", nonempty, nullable=True),
    }),
}
_MCP_KEYS = ("mcp_servers", "mcp_servers_file")
_TOP_KEYS = ("default_agent", "agents", "models", *_SECTIONS, "hooks", *_MCP_KEYS)


# ---------------------------------------------------------------------------------------------
# The file layer: the document turned into a Config over the defaults.


def _parse_file(doc: Doc, root: yaml.Node) -> Config:
    if not isinstance(root, (yaml.MappingNode, yaml.ScalarNode)) or (
        isinstance(root, yaml.ScalarNode) and root.tag != "tag:yaml.org,2002:null"
    ):
        raise doc.error(root, "", "the top level must be a mapping of settings "
                                  f"(got {describe_node(root)})")
    top = doc.items(root, "")
    for name, (knode, _) in top.items():
        if name not in _TOP_KEYS:
            raise doc.error(knode, name, unknown_key(name, _TOP_KEYS))
    kwargs: dict[str, Any] = {}
    for name, (cls, specs) in _SECTIONS.items():
        if name in top:
            kwargs[name] = _section(doc, name, top[name][1], cls, specs)
    if "models" in top:
        kwargs["models"] = _models(doc, top["models"][1])
    agents = _agents(doc, top["agents"][1]) if "agents" in top else {}
    if agents:
        kwargs["agents"] = agents
    default = "assistant" if not agents or "assistant" in agents else next(iter(agents))
    if "default_agent" in top:
        node = top["default_agent"][1]
        default = doc.scalar(node, "default_agent", Field("str", "must be an agent name"))
        known = list(agents or ["assistant"])
        if default not in known:
            raise doc.error(node, "default_agent",
                            f"unknown agent {default!r}; known agents: {', '.join(known)}")
    if "hooks" in top:
        kwargs["hooks"] = read_hooks(doc, top["hooks"][1])
        if kwargs["hooks"] and doc.untrusted is not None:  # read and checked, never run
            doc.ignored.append("hooks")
            kwargs["hooks_held"] = (f"{doc.display} {doc.untrusted.reason}; run "
                                    "`rollchat trust` to run them")
    return Config(default_agent=default, mcp_servers=_servers(doc, top, ""), **kwargs)


def _section(doc: Doc, name: str, node: yaml.Node, cls: type[Any],
             specs: Mapping[str, Field]) -> Any:
    entries = doc.items(node, name)
    if doc.untrusted is not None:  # never taken untrusted: not even checked
        for key in [k for k in entries if f"{name}.{k}" in TRUSTED_ONLY]:
            del entries[key]
            doc.ignored.append(f"{name}.{key}")
    values, nodes = doc.fields(node, name, specs, entries=entries)
    if isinstance(values.get("files"), tuple):
        _check_names(doc, nodes["files"], f"{name}.files", values["files"])
    # (the offline model's word delay defaults to None, chosen at run time: an untrusted file
    # may set at most the delay a terminal gets)
    bounds = UIConfig(offline_word_delay=OFFLINE_WORD_DELAY) if cls is UIConfig else cls()
    confine(values, name, doc.base_dir, doc.untrusted, doc.ignored, bounds)
    for path_key in ("history_file", "user_dir", *(("dir",) if cls is MemoryConfig else ())):
        if values.get(path_key) is not None:
            values[path_key] = resolve_path(doc.base_dir, values[path_key])
    section = dataclasses.replace(cls(), **values)
    if isinstance(section, RetryConfig) and section.max_delay < section.base_delay:
        raise doc.error(nodes.get("max_delay") or nodes["base_delay"], "retry.max_delay",
                        f"must be >= retry.base_delay (got {section.max_delay} < "
                        f"{section.base_delay})")
    return section


def _check_names(doc: Doc, node: yaml.Node, key: str, names: tuple[str, ...]) -> None:
    """Instruction file names are looked for in each directory (the user config directory,
    the project's): a name may go down into a folder, never up or out of it."""
    for name in names:
        path = PurePosixPath(name.replace("\\", "/"))
        if path.is_absolute() or ".." in path.parts or name.startswith("~") or (
                len(name) > 1 and name[1] == ":"):
            raise doc.error(node, key, "must be file names inside the directories searched "
                            f"(AGENTS.md, docs/TEAM.md), not a path out of them (got "
                            f"{show_value(name)})")


def _models(doc: Doc, node: yaml.Node) -> dict[str, ModelConfig]:
    models: dict[str, ModelConfig] = {}
    for name, (knode, vnode) in doc.items(node, "models").items():
        if not name.strip():
            raise doc.error(knode, "models", "model names must not be empty")
        dotted = f"models.{name}"
        entries = doc.items(vnode, dotted)
        values, _ = doc.fields(vnode, dotted, _MODEL_FIELDS, skip=("price",), entries=entries)
        if "price" in entries:
            values["price"] = _price(doc, entries["price"][1], f"{dotted}.price")
        if not values:
            raise doc.error(vnode, dotted, "set context_window, price, images or store")
        confine_model(values, dotted, doc.untrusted, doc.ignored)
        models[name] = ModelConfig(**values)
    return models


def _price(doc: Doc, node: yaml.Node, dotted: str) -> Price:
    """A model's price: input and output required, cached and cache_write default to the
    input price (no discount for cache reads, no surcharge for writes)."""
    values, _ = doc.fields(node, dotted, _PRICE_FIELDS)
    for required in ("input", "output"):
        if required not in values:
            raise doc.error(node, f"{dotted}.{required}", "is required (dollars per million "
                                                          "tokens)")
    return Price(values["input"], values["output"], values.get("cached", values["input"]),
                 values.get("cache_write"))


def _agents(doc: Doc, node: yaml.Node) -> dict[str, AgentConfig]:
    agents: dict[str, AgentConfig] = {}
    for key, (knode, vnode) in doc.items(node, "agents").items():
        if not _AGENT_KEY.fullmatch(key):
            raise doc.error(knode, f"agents.{key}", "agent names are 1-64 letters, digits, "
                                                    "'-' or '_', starting with a letter or digit")
        agents[key] = _agent(doc, key, vnode)
    return agents


def _agent(doc: Doc, key: str, node: yaml.Node) -> AgentConfig:
    dotted = f"agents.{key}"
    entries = doc.items(node, dotted)  # (once: reading a mapping resolves its merges)
    values, nodes = doc.fields(node, dotted, _AGENT_FIELDS, skip=(*_MCP_KEYS, "compaction"),
                               entries=entries)
    confine(values, dotted, doc.base_dir, doc.untrusted, doc.ignored, AgentConfig())
    if "compaction" in entries:
        values["compaction"] = CompactionSettings(**doc.fields(
            entries["compaction"][1], f"{dotted}.compaction", COMPACTION_FIELDS)[0])
    explicit = frozenset(values)
    values["mcp_servers"] = _servers(doc, entries, f"{dotted}.")
    values.setdefault("name", re.sub(r"[-_]+", " ", key).title())
    prompt_file = values.get("system_prompt_file")
    if prompt_file is not None:
        if "system_prompt" in values:
            raise doc.error(nodes["system_prompt_file"], dotted,
                            "set system_prompt or system_prompt_file, not both")
        path = resolve_path(doc.base_dir, prompt_file)
        values["system_prompt_file"] = path
        values["system_prompt"] = _read_prompt(doc, nodes["system_prompt_file"], dotted, path)
    for name in ("file", "skills_dir"):
        if values.get(name) is not None:
            values[name] = resolve_path(doc.base_dir, values[name])
    return AgentConfig(key=key, set_in_config=explicit, **values)


def _servers(doc: Doc, entries: Mapping[str, tuple[yaml.Node, yaml.Node]],
             prefix: str) -> tuple[McpServerConfig, ...]:
    """``mcp_servers`` and ``mcp_servers_file`` of one mapping (the top level or an agent):
    the file's servers first, then the inline ones. An untrusted project file's servers are
    kept but held (never started) and its servers file is not read."""
    out: dict[str, McpServerConfig] = {}
    if "mcp_servers_file" in entries:
        node = entries["mcp_servers_file"][1]
        key = f"{prefix}mcp_servers_file"
        path = doc.scalar(node, key, Field("path", "must be a file path, or null", nonempty,
                                           nullable=True))
        if path is not None and doc.untrusted is not None:
            doc.ignored.append(key)
        elif path is not None:
            for server in read_servers_file(resolve_path(doc.base_dir, path),
                                            f"{doc.display}:{node.start_mark.line + 1}: {key}"):
                out[server.name] = server
    if "mcp_servers" in entries:
        key = f"{prefix}mcp_servers"
        held = None
        if doc.untrusted is not None:
            doc.ignored.append(key)
            held = f"{doc.display} {doc.untrusted.reason}; run `rollchat trust` to start it"
        for name, (knode, vnode) in doc.items(entries["mcp_servers"][1], key).items():
            raw = doc.loader.construct_object(vnode, deep=True)
            try:
                out[name] = check_server(name, raw, base_dir=doc.base_dir, origin=doc.display,
                                         held=held)
            except ServerProblem as exc:
                dotted = f"{key}.{name}" + (f".{exc.key}" if exc.key else "")
                raise doc.error(vnode if exc.key else knode, dotted, str(exc)) from None
    return tuple(out.values())


def _read_prompt(doc: Doc, node: yaml.Node, dotted: str, path: Path) -> str:
    key = f"{dotted}.system_prompt_file"
    try:
        if path.is_dir():
            raise doc.error(node, key, f"{path} is a directory, not a file")
        with path.open("rb") as handle:
            data = handle.read(_MAX_PROMPT_BYTES + 1)
    except OSError as exc:
        raise doc.error(node, key, f"cannot read {path}: {exc.strerror or exc}") from None
    if len(data) > _MAX_PROMPT_BYTES:
        raise doc.error(node, key, f"{path} is too large for a system prompt (limit 1 MiB)")
    try:
        return data.decode("utf-8-sig").rstrip()
    except UnicodeDecodeError:
        raise doc.error(node, key, f"{path} is not valid UTF-8") from None


def load_file(path: Path, display: str, trust: TrustCheck | None = None) -> Config:
    """The Config in the file at ``path`` over the defaults; ``display`` names it in errors.
    ``trust`` (for a project file): given the hash of the bytes read, None when the file is
    trusted, else what confines it; the settings it could not set are named in
    ``Config.trust_notice``."""
    raw = read_text(path, display)
    untrusted = trust(raw.sha256) if trust is not None else None
    try:
        root = compose(raw.text, display)
        if root is None:
            return Config(source=path, source_sha256=raw.sha256)
        doc = Doc(display, path.parent, untrusted)
        config = _parse_file(doc, root)
        line = notice(display, untrusted, doc.ignored) if untrusted is not None else None
        return dataclasses.replace(config, source=path, source_sha256=raw.sha256,
                                   ignored_settings=tuple(doc.ignored), trust_notice=line)
    except RecursionError:
        raise ConfigError(f"{display}: invalid YAML: nested too deeply") from None

