"""MCP servers in the configuration: the ``McpServerConfig`` value, its checks (``mcp_servers:``
in the YAML file, a Claude Code ``.mcp.json`` named by ``mcp_servers_file``) and the ``${VAR}``
/ ``${VAR:-default}`` expansion done at start-up. No SDK here: settings only."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from rollchat.config.fields import is_url, resolve_path
from rollchat.config.yamlfile import read_capped
from rollchat.errors import ConfigError

DEFAULT_STARTUP_TIMEOUT = 30.0  # seconds to start and list tools: npx -y / uvx first runs download
FETCHING_STARTUP_TIMEOUT = 120.0  # the default for a command that may download first
FETCHERS = frozenset({"npx", "uvx", "bunx", "pnpx", "pipx"})  # (npx -y took 28 s, first run)
DEFAULT_CALL_TIMEOUT = 60.0  # seconds for one tool call
MAX_SERVERS_FILE_BYTES = 256 * 1024
SERVER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
_VAR = re.compile(r"\$\{([^}]*)\}")
_VAR_BODY = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(?::-(.*))?", re.DOTALL)
_SECRET_NAME = re.compile(r"auth|key|token|secret|passw|credential|cookie", re.IGNORECASE)
TRANSPORTS = {"stdio": "stdio", "http": "http", "streamable-http": "http",
              "streamable_http": "http", "sse": "sse"}
_KEYS = ("type", "command", "args", "env", "cwd", "url", "headers", "include_tools",
         "exclude_tools", "startup_timeout", "call_timeout")
_STDIO_ONLY = ("command", "args", "env", "cwd")
_HTTP_ONLY = ("url", "headers")


@dataclass(frozen=True)
class McpServerConfig:
    """One MCP server: how to reach it, which of its tools to offer, and its timeouts.

    Values keep their ``${VAR}`` references; ``expanded`` resolves them when the server
    starts, so keys stay in the environment. ``held``: why it must not be started (it comes
    from a project file that is not trusted), or None."""

    name: str
    transport: str  # "stdio" | "http" | "sse" (reported as unsupported when started)
    command: str | None = None
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    cwd: Path | None = None
    url: str | None = None
    headers: tuple[tuple[str, str], ...] = ()
    include_tools: tuple[str, ...] | None = None
    exclude_tools: tuple[str, ...] = ()
    startup_timeout: float = DEFAULT_STARTUP_TIMEOUT
    call_timeout: float = DEFAULT_CALL_TIMEOUT
    origin: str = ""  # the file it was read from, for messages
    held: str | None = None

    def expanded(self, env: Mapping[str, str]) -> McpServerConfig:
        """This server with ``${VAR}`` resolved from ``env``; ConfigError naming an unset
        variable that has no default."""
        def one(text: str) -> str:
            return expand(text, env, self.name)

        return replace(
            self,
            command=one(self.command) if self.command is not None else None,
            args=tuple(one(a) for a in self.args),
            env=tuple((k, one(v)) for k, v in self.env),
            url=one(self.url) if self.url is not None else None,
            headers=tuple((k, one(v)) for k, v in self.headers),
        )


class ServerProblem(ValueError):
    """A bad setting of one server: the dotted key below the server, and the rule."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(message)
        self.key = key


def check_references(text: str, key: str) -> None:
    """Every ``${...}`` in ``text`` is ``${NAME}`` or ``${NAME:-default}``."""
    for match in _VAR.finditer(text):
        if not _VAR_BODY.fullmatch(match[1]):
            raise ServerProblem(key, f"{match[0]!r} is not ${{NAME}} or ${{NAME:-default}}")
    if "${" in _VAR.sub("", text):
        raise ServerProblem(key, "has a '${' without its closing '}'")


def expand(text: str, env: Mapping[str, str], server: str) -> str:
    """``text`` with ``${NAME}`` and ``${NAME:-default}`` replaced from ``env`` (the default
    also when the variable is set but empty, as in the shell)."""
    def sub(match: re.Match[str]) -> str:
        body = _VAR_BODY.fullmatch(match[1])
        if body is None:  # checked when the config was read
            raise ConfigError(f"MCP server {server!r}: bad reference {match[0]!r}")
        name, default = body[1], body[2]
        value = env.get(name)
        if value:
            return value
        if default is not None:
            return default
        if value is not None:
            return value
        raise ConfigError(f"MCP server {server!r}: ${{{name}}} is not set in the environment")

    return _VAR.sub(sub, text)


def _strings(value: Any, key: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ServerProblem(key, "must be a list of strings")
    return tuple(value)


def _pairs(value: Any, key: str, what: str) -> tuple[tuple[str, str], ...]:
    if not isinstance(value, dict) or not all(
            isinstance(k, str) and isinstance(v, (str, int, float)) and not isinstance(v, bool)
            for k, v in value.items()):
        raise ServerProblem(key, f"must be a mapping of {what} names to strings")
    pairs = tuple((k, str(v)) for k, v in value.items())
    for name, text in pairs:
        check_references(text, f"{key}.{name}")
        if _SECRET_NAME.search(name) and "${" not in text and text.strip():
            raise ServerProblem(f"{key}.{name}", "holds a literal value that looks like a "
                                "secret; write ${VAR} so the key stays in the environment")
    return pairs


def _seconds(value: Any, key: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 3600:
        raise ServerProblem(key, "must be a number of seconds > 0 (at most 3600)")
    return float(value)


def check_server(name: str, raw: Any, *, base_dir: Path, origin: str,
                 held: str | None = None) -> McpServerConfig:
    """One server entry (a mapping, as in YAML or JSON) checked; ServerProblem if bad."""
    if not SERVER_NAME.fullmatch(name):
        raise ServerProblem("", "server names are 1-64 letters, digits, '.', '-' or '_', "
                            "starting with a letter or digit")
    if not isinstance(raw, dict):
        raise ServerProblem("", "must be a mapping (command and args, or url)")
    for key in raw:
        if key not in _KEYS:
            raise ServerProblem(str(key), f"unknown key; known keys: {', '.join(_KEYS)}")
    if "type" not in raw and "command" in raw and "url" in raw:
        raise ServerProblem("url", "set command (a stdio server) or url (an HTTP server), "
                            "not both")
    kind = raw.get("type") or ("http" if "url" in raw else "stdio")
    if not isinstance(kind, str) or kind not in TRANSPORTS:
        raise ServerProblem("type", "must be stdio, http (streamable HTTP) or sse")
    transport = TRANSPORTS[kind]
    values: dict[str, Any] = {"name": name, "transport": transport, "origin": origin,
                              "held": held}
    wrong = _HTTP_ONLY if transport == "stdio" else _STDIO_ONLY
    for key in wrong:
        if key in raw:
            raise ServerProblem(key, f"does not apply to a {transport} server")
    if transport == "stdio":
        command = raw.get("command")
        if not isinstance(command, str) or not command.strip():
            raise ServerProblem("command", "is required: the program that runs the server")
        check_references(command, "command")
        values["command"] = command
        values["args"] = _strings(raw.get("args", []), "args")
        for index, arg in enumerate(values["args"]):
            check_references(arg, f"args[{index}]")
        values["env"] = _pairs(raw.get("env", {}), "env", "variable")
        if raw.get("cwd") is not None:
            if not isinstance(raw["cwd"], str) or not raw["cwd"].strip():
                raise ServerProblem("cwd", "must be a directory path")
            values["cwd"] = resolve_path(base_dir, Path(raw["cwd"]).expanduser())
    else:
        url = raw.get("url")
        if not isinstance(url, str):
            raise ServerProblem("url", "is required: the server's http:// or https:// URL")
        check_references(url, "url")
        if "${" not in url and not is_url(url):
            raise ServerProblem("url", "must be an http:// or https:// URL")
        values["url"] = url
        values["headers"] = _pairs(raw.get("headers", {}), "headers", "header")
    if raw.get("include_tools") is not None:
        values["include_tools"] = _strings(raw["include_tools"], "include_tools")
    values["exclude_tools"] = _strings(raw.get("exclude_tools", []), "exclude_tools")
    if values.get("command") and Path(values["command"]).name in FETCHERS:
        values["startup_timeout"] = FETCHING_STARTUP_TIMEOUT
    for key in ("startup_timeout", "call_timeout"):
        if key in raw:
            values[key] = _seconds(raw[key], key)
    return McpServerConfig(**values)


def read_servers_file(path: Path, display: str) -> tuple[McpServerConfig, ...]:
    """The servers of a Claude Code ``.mcp.json`` (``{"mcpServers": {name: entry}}``), in
    file order; ConfigError naming the file and the server for anything wrong."""
    try:
        data = read_capped(path, MAX_SERVERS_FILE_BYTES)
    except OSError as exc:
        raise ConfigError(f"{display}: cannot read {path}: {exc.strerror or exc}") from None
    if data is None:
        raise ConfigError(f"{display}: {path} is too large for an MCP servers file "
                          "(limit 256 KiB)")
    try:
        document = json.loads(data.decode("utf-8-sig"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise ConfigError(f"{display}: {path} is not valid JSON ({exc})") from None
    servers = document.get("mcpServers") if isinstance(document, dict) else None
    if not isinstance(servers, dict):
        raise ConfigError(f"{display}: {path} has no \"mcpServers\" mapping")
    out = []
    for name, raw in servers.items():
        try:
            out.append(check_server(name, raw, base_dir=path.parent, origin=str(path)))
        except ServerProblem as exc:
            key = f".{exc.key}" if exc.key else ""
            raise ConfigError(f"{display}: {path}: mcpServers.{name}{key}: {exc}") from None
    return tuple(out)


def merged(*groups: Sequence[McpServerConfig]) -> tuple[McpServerConfig, ...]:
    """Servers from several places in order; a later entry with a name already seen takes
    the earlier one's place (an agent's server replaces a top-level one of the same name)."""
    out: dict[str, McpServerConfig] = {}
    for group in groups:
        for server in group:
            out[server.name] = server
    return tuple(out.values())
