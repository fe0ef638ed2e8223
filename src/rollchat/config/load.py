"""Resolving the configuration: find the config file, read it (a project file confined unless
trusted), lay the environment and the flags over it; and `rollchat trust`, which records a file."""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rollchat.config.fields import (
    MODEL,
    PROVIDER,
    URL,
    Field,
    coerce,
    nonempty,
    resolve_path,
    show_value,
)
from rollchat.config.settings import (
    PROJECT_FILE,
    AgentConfig,
    Config,
    ConfigOverrides,
    default_user_config_dir,
)
from rollchat.errors import ConfigError

_NO_OVERRIDES = ConfigOverrides()

# ---------------------------------------------------------------------------------------------
# The environment and flag layers, the file lookup, and the entry point.

_LAYER_VARS = {
    "agent": "ROLLCHAT_AGENT",
    "provider": "ROLLCHAT_PROVIDER",
    "model": "ROLLCHAT_MODEL",
    "base_url": "ROLLCHAT_BASE_URL",
    "sessions_dir": "ROLLCHAT_SESSIONS_DIR",
}
_LAYER_SPECS = {
    "agent": Field("str", "must be an agent name", nonempty),
    "provider": PROVIDER,
    "model": dataclasses.replace(MODEL, need="must be a model name"),
    "base_url": dataclasses.replace(URL, need="must be an http:// or https:// URL"),
    "sessions_dir": Field("path", "must be a directory path", nonempty),
}


def _layers(env: Mapping[str, str], overrides: ConfigOverrides) -> dict[str, tuple[str, Any]]:
    """Per setting, the winning (source, checked value): the flag if set, else the variable."""
    chosen: dict[str, tuple[str, Any]] = {}
    for name, var in _LAYER_VARS.items():
        flag = getattr(overrides, name)
        source, raw = (f"--{name.replace('_', '-')}", flag) if flag is not None else (
            f"${var}", env.get(var) or None)
        if raw is None:
            continue
        spec = _LAYER_SPECS[name]
        good, value = coerce(spec, str(raw))
        if not good:
            raise ConfigError(f"{source}: {spec.need} (got {show_value(str(raw))})")
        chosen[name] = (source, value)
    return chosen


def _apply(config: Config, chosen: Mapping[str, tuple[str, Any]], no_save: bool,
           cwd: Path, user_config_dir: Path) -> Config:
    key = config.default_agent
    if "agent" in chosen:
        source, key = chosen["agent"]
        config = _with_alias(config, key, user_config_dir)
        if key not in config.agents:
            raise ConfigError(f"{source}: unknown agent {key!r}; known agents: "
                              f"{', '.join(config.agents)}")
    changes = {n: chosen[n][1] for n in ("provider", "model", "base_url") if n in chosen}
    agents = {**config.agents, key: dataclasses.replace(config.agents[key], **changes)}
    directory = chosen["sessions_dir"][1] if "sessions_dir" in chosen else config.session.dir
    session = dataclasses.replace(
        config.session,
        dir=resolve_path(cwd, Path(os.path.expanduser(directory))),
        auto_save=config.session.auto_save and not no_save,
    )
    return dataclasses.replace(config, agents=agents, default_agent=key, session=session)


def _exists(path: Path, label: str) -> bool:
    try:
        return path.exists()
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{label}: cannot use {str(path)!r}: {exc}") from None


def find_config_file(config_path: Path | None, env: Mapping[str, str], cwd: Path,
                     user_config_dir: Path) -> Path | None:
    """The config file to read: --config, else $ROLLCHAT_CONFIG, else ./rollchat.yml, else
    config.yml in the user config directory; None when there is none. Named files must exist."""
    named = [("--config", config_path), ("$ROLLCHAT_CONFIG", env.get("ROLLCHAT_CONFIG") or None)]
    for label, raw in named:
        if raw is not None:
            path = resolve_path(cwd, Path(os.path.expanduser(raw)))
            if not _exists(path, label):
                raise ConfigError(f"{label}: no such file: {raw}")
            return path
    for candidate in (cwd / PROJECT_FILE, user_config_dir / "config.yml"):
        if _exists(candidate, "config"):
            return candidate
    return None


def display_path(path: Path, cwd: Path) -> str:
    try:
        return str(path.relative_to(cwd))
    except ValueError:
        return str(path)


def load_config(*, config_path: Path | None, env: Mapping[str, str], cwd: Path,
                overrides: ConfigOverrides = _NO_OVERRIDES,
                user_config_dir: Path | None = None) -> Config:
    """Resolve defaults < file < environment < flags into one validated Config.

    A project file (./rollchat.yml found by the lookup, not named by --config or
    $ROLLCHAT_CONFIG) is applied without the settings that need trust unless ``rollchat trust``
    recorded it with its current content (``Config.trust_notice`` then names them).
    Raises ConfigError (file, line and dotted key in the message) on any bad input.
    """
    if user_config_dir is None:
        user_config_dir = default_user_config_dir()
    path = find_config_file(config_path, env, cwd, user_config_dir)
    if path is None:
        config = Config()
    else:
        from rollchat.config.file import load_file  # yaml is imported only to read a file
        from rollchat.config.trust import trust_check

        named = config_path is not None or bool(env.get("ROLLCHAT_CONFIG"))
        project = not named and path == cwd / PROJECT_FILE
        trust = trust_check(path, user_config_dir) if project else None
        config = load_file(path, display_path(path, cwd), trust)
    config = with_claude_settings(config, cwd, user_config_dir, _home(env))
    config = with_project_mcp(config, cwd, user_config_dir)
    return _per_run(_apply(config, _layers(env, overrides), overrides.no_save, cwd,
                           user_config_dir), overrides)


def _with_alias(config: Config, key: str, user_config_dir: Path) -> Config:
    """``config`` with the agent ``key`` saved by ``rollchat agents add`` in the user config,
    when the config read (a project's) has no agent of that name: an alias works from any
    directory."""
    if key in config.agents:
        return config
    from rollchat.config.aliases import alias_file

    file = alias_file(user_config_dir, key)
    if file is None:
        return config
    agent = AgentConfig(key=key, name=re.sub(r"[-_]+", " ", key).title(), file=file,
                        set_in_config=frozenset({"file"}))
    return dataclasses.replace(config, agents={**config.agents, key: agent})


def _per_run(config: Config, overrides: ConfigOverrides) -> Config:
    """The flags that turn a cost off for one run: --exit-summary, --no-memory."""
    if overrides.exit_summary is not None:
        summary = dataclasses.replace(config.summary, on_exit=overrides.exit_summary)
        config = dataclasses.replace(config, summary=summary)
    if overrides.no_memory:
        config = dataclasses.replace(config, memory=dataclasses.replace(config.memory,
                                                                        enabled=False))
    return config


PROJECT_MCP = ".mcp.json"  # Claude Code's project MCP servers


def with_project_mcp(config: Config, cwd: Path, user_config_dir: Path) -> Config:
    """``config`` with the servers of the project's ./.mcp.json once `rollchat trust .mcp.json`
    recorded it (the config's own servers win a name); until then one line names the file,
    its servers and the command. A file the config reads already (mcp_servers_file) is left
    to it."""
    path = cwd / PROJECT_MCP
    servers = (*config.mcp_servers, *(s for a in config.agents.values() for s in a.mcp_servers))
    if not path.is_file() or any(s.origin == str(path) for s in servers):
        return config  # (before the imports: every command comes by here, most with no file)
    import hashlib
    import json

    from rollchat.config.mcp_servers import merged, read_servers_file
    from rollchat.config.trust import CHANGED, TRUST_COMMAND, trust_check

    try:
        with path.open("rb") as handle:  # a larger file is refused when trusted (256 KiB)
            data = handle.read(256 * 1024 + 1)
    except OSError as exc:
        return dataclasses.replace(config, settings_notes=(*config.settings_notes, (
            f"{PROJECT_MCP}: cannot read it ({exc.strerror or exc}); its servers do not start")))
    untrusted = trust_check(path, user_config_dir)(hashlib.sha256(data).hexdigest())
    if untrusted is None:
        return dataclasses.replace(config, mcp_servers=merged(
            read_servers_file(path, PROJECT_MCP), config.mcp_servers))
    try:
        found = json.loads(data.decode("utf-8-sig")).get("mcpServers") or {}
        names = f" (MCP servers: {', '.join(map(str, found))})" if found else ""
    except (ValueError, UnicodeDecodeError, AttributeError, RecursionError):
        names = ""
    why = ("changed since you trusted it" if untrusted.reason == CHANGED
           else "is not trusted")
    line = (f"{PROJECT_MCP}{names} {why}, so none of its servers starts; if you trust the "
            f"file, run `{TRUST_COMMAND} {PROJECT_MCP}`")
    return dataclasses.replace(config, settings_notes=(*config.settings_notes, line))


def _home(env: Mapping[str, str]) -> Path:
    return Path(env["HOME"]) if env.get("HOME") else Path.home()


user_home = _home  # (the saved prompts' ~ is the same home)


def with_claude_settings(config: Config, cwd: Path, user_config_dir: Path,
                         home: Path) -> Config:
    """``config`` with the hooks and permissions of Claude Code's settings: the user's
    (~/.claude/settings.json, trusted) after the config file's, then the project's
    (./.claude/settings.json, only what needs no trust until `rollchat trust` records it)."""
    from rollchat.config.claude_settings import SETTINGS, read_settings
    from rollchat.config.trust import trust_check

    project = cwd / SETTINGS
    found = [read_settings(home / SETTINGS, "~/.claude/settings.json"),
             read_settings(project, str(SETTINGS), trust_check(project, user_config_dir))]
    hooks = tuple(h for s in found for h in s.hooks)
    allow = tuple(r for s in found for r in s.allow)
    deny = tuple(r for s in found for r in s.deny)
    notes = tuple(n for s in found for n in s.notes)
    if not (hooks or allow or deny or notes):
        return config
    agents = {key: dataclasses.replace(agent, allow=agent.allow + allow,
                                       deny=agent.deny + deny)
              for key, agent in config.agents.items()}
    held = config.hooks_held
    own = config.hooks if held is None else ()  # held ones never run: Claude's still do
    return dataclasses.replace(config, agents=agents, hooks=own + hooks,
                               hooks_held=held if not hooks else None,
                               settings_notes=config.settings_notes + notes)


def looked_at(config: Config, *, config_path: Path | None, env: Mapping[str, str], cwd: Path,
              user_config_dir: Path) -> list[Path] | None:
    """Every file load_config read or looked for to resolve ``config`` (the named file, or
    ./rollchat.yml and the user's config.yml; the trust record for a project file; the agents'
    prompt files): what config.recall checks to tell the same files. Keep it in step with
    find_config_file and load_file. None when no list would do: a project file that is a link
    (its trust is recorded for the file it points to)."""
    if config_path is not None or env.get("ROLLCHAT_CONFIG"):
        found = find_config_file(config_path, env, cwd, user_config_dir)
        files = [found] if found is not None else []
    else:
        project = cwd / PROJECT_FILE
        if project.is_symlink():
            return None
        files = [project, user_config_dir / "config.yml"]
        if config.source == project:
            from rollchat.config.trust import TRUST_FILE

            files.append(user_config_dir / TRUST_FILE)
    prompts = [a.system_prompt_file for a in config.agents.values() if a.system_prompt_file]
    from rollchat.config.claude_settings import SETTINGS  # read by with_claude_settings

    claude = [_home(env) / SETTINGS, cwd / SETTINGS, cwd / PROJECT_MCP]
    # their trust is recorded beside a project file's
    if (cwd / SETTINGS).exists() or (cwd / PROJECT_MCP).exists():
        from rollchat.config.trust import TRUST_FILE

        claude.append(user_config_dir / TRUST_FILE)
    return files + prompts + claude


# ---------------------------------------------------------------------------------------------
# `rollchat trust PATH`.


def _trust_mcp(target: Path, display: str, user_config_dir: Path) -> str:
    """``rollchat trust .mcp.json``: the project's MCP servers checked, then recorded."""
    import hashlib

    from rollchat.config.mcp_servers import MAX_SERVERS_FILE_BYTES, read_servers_file
    from rollchat.config.trust import TRUST_COMMAND, record_trust

    def read() -> bytes:
        try:
            with target.open("rb") as handle:
                return handle.read(MAX_SERVERS_FILE_BYTES + 1)
        except OSError as exc:
            raise ConfigError(f"{display}: cannot read it: {exc.strerror or exc}") from None

    data = read()
    servers = read_servers_file(target, display)  # every server checked: ConfigError if not
    if read() != data:
        raise ConfigError(f"{display}: changed while it was read; run `{TRUST_COMMAND}` again")
    record = record_trust(target, hashlib.sha256(data).hexdigest(), user_config_dir)
    names = ", ".join(s.name for s in servers) or "none"
    return (f"Trusted {display}: its MCP servers ({names}) now start (recorded in {record}); "
            f"if the file changes, run `{TRUST_COMMAND}` again")


def _trust_claude(target: Path, display: str, user_config_dir: Path) -> str:
    """``rollchat trust .claude/settings.json``: Claude Code's project settings, recorded as a
    project rollchat.yml is; what now applies is named."""
    from rollchat.config.claude_settings import read_settings
    from rollchat.config.trust import NOT_TRUSTED, TRUST_COMMAND, Untrusted, record_trust

    full = read_settings(target, display)
    if full.sha256 is None:
        raise ConfigError(f"{display}: cannot read it; nothing was recorded")
    record = record_trust(target, full.sha256, user_config_dir)
    held = read_settings(target, display, lambda _sha: Untrusted(target.parent, NOT_TRUSTED))
    keys = [k for k, on in (("hooks", bool(full.hooks)), ("permissions.allow", bool(full.allow)))
            if on and not (held.hooks if k == "hooks" else held.allow)]
    what = (f"its {' and '.join(keys)} now {'applies' if len(keys) == 1 else 'apply'}" if keys
            else "nothing in it needed trust")
    return (f"Trusted {display}: {what} (recorded in {record}); if the file changes, run "
            f"`{TRUST_COMMAND}` again")


def _trust_prompt(target: Path, display: str, user_config_dir: Path) -> str:
    """``rollchat trust .claude/commands/NAME.md``: a project's saved prompt, whose
    ``allowed-tools`` then apply (see config/saved_prompts.py)."""
    import hashlib

    from rollchat.config.saved_prompts import MAX_BYTES
    from rollchat.config.trust import TRUST_COMMAND, record_trust

    try:
        data = target.read_bytes()
    except OSError as exc:
        raise ConfigError(f"{display}: cannot be read ({exc.strerror or exc})") from None
    if len(data) > MAX_BYTES:
        raise ConfigError(f"{display}: larger than {MAX_BYTES // 1024} KiB, not a saved prompt")
    record = record_trust(target, hashlib.sha256(data).hexdigest(), user_config_dir)
    return (f"Trusted {display}: its allowed-tools now apply and its !`commands` may run, "
            f"each asked as approval says (recorded in {record}); if the "
            f"file changes, run `{TRUST_COMMAND} {display}` again")


def trust_file(path: Path, *, cwd: Path, user_config_dir: Path) -> str:
    """``rollchat trust PATH``: check the file loads, record its path and hash, and say what
    now applies. ConfigError for a missing or invalid file (nothing is recorded then)."""
    from rollchat.config.file import load_file
    from rollchat.config.trust import NOT_TRUSTED, TRUST_COMMAND, Untrusted, record_trust

    target = path if path.is_absolute() else cwd / path
    try:
        exists = target.is_file() or target.is_dir()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot use it: {exc}") from None
    if not exists:
        raise ConfigError(f"{path}: no such file; give the path of a project config file "
                          "(default: ./rollchat.yml)")
    display = display_path(target, cwd)
    if target.name == "settings.json" and target.parent.name == ".claude":
        return _trust_claude(target, display, user_config_dir)
    if target.name == PROJECT_MCP:
        return _trust_mcp(target, display, user_config_dir)
    if target.suffix == ".md" and target.parent.name == "commands":
        return _trust_prompt(target, display, user_config_dir)
    confined = load_file(target, display, lambda _sha: Untrusted(target.parent, NOT_TRUSTED))
    full = load_file(target, display)  # every setting checked, the prompt files read
    if full.source_sha256 != confined.source_sha256 or full.source_sha256 is None:
        raise ConfigError(f"{display}: changed while it was read; run `{TRUST_COMMAND}` again")
    record = record_trust(target, full.source_sha256, user_config_dir)
    keys = list(confined.ignored_settings)
    what = (f"{', '.join(keys)} now {'applies' if len(keys) == 1 else 'apply'}" if keys
            else "nothing in it needed trust")
    return (f"Trusted {display}: {what} (recorded in {record}); if the file changes, run "
            f"`{TRUST_COMMAND}` again")
