"""Agent aliases: an agent file saved under a short name in the user config (``agents: NAME:
file: PATH``), added and removed by ``rollchat agents`` without disturbing the file's comments,
layout or other settings (ruamel.yaml's round trip), and found from any directory."""

from __future__ import annotations

import os
import re
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from rollchat.errors import ConfigError

if TYPE_CHECKING:
    from ruamel.yaml import YAML

CONFIG_NAME = "config.yml"
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")  # the config's own rule for agent names


@dataclass(frozen=True)
class Alias:
    """An agent of the user config: its name, its agent file (None: an agent set up in the
    config itself, not an alias) and whether ``agents remove`` may take it out."""

    name: str
    file: Path | None
    removable: bool


def user_config(user_config_dir: Path) -> Path:
    return user_config_dir / CONFIG_NAME


def aliases(user_config_dir: Path) -> list[Alias]:
    """The agents of the user config, in its order (none when there is no file). ConfigError
    for a file that does not load."""
    from rollchat.config.file import load_file

    path = user_config(user_config_dir)
    if not path.is_file():
        return []
    config = load_file(path, str(path))
    if "agents" not in _top_keys(path):  # the built-in assistant only
        return []
    return [Alias(key, agent.file, agent.set_in_config == frozenset({"file"}))
            for key, agent in config.agents.items()]


def alias_file(user_config_dir: Path, name: str) -> Path | None:
    """The agent file of the user config's agent ``name`` (None: no such alias). A user config
    that does not load names none (the chat then says what is wrong with it)."""
    try:
        found = aliases(user_config_dir)
    except ConfigError:
        return None
    return next((a.file for a in found if a.name == name and a.file is not None), None)


def _top_keys(path: Path) -> list[str]:
    data = _load(path.read_text(encoding="utf-8"), str(path))
    return [str(k) for k in data] if isinstance(data, dict) else []


def _yaml() -> YAML:
    from ruamel.yaml import YAML

    yaml = YAML()  # round trip: comments, order, quotes and flow style kept
    yaml.preserve_quotes = True
    yaml.width = 4096  # never re-wrap a long line that was not touched
    return yaml


def _load(text: str, display: str) -> object:
    from ruamel.yaml.error import YAMLError

    try:
        return _yaml().load(text)
    except YAMLError as exc:
        raise ConfigError(f"{display}: invalid YAML: {' '.join(str(exc).split())[:200]}") from None


def add(user_config_dir: Path, name: str, file: Path) -> Path:
    """Write ``agents: NAME: file: FILE`` into the user config (created when there is none),
    keeping everything else in it as it was; the result is checked with the real loader before
    it replaces the file. The first agent added to a config without ``agents:`` comes with
    ``assistant: {}``, so that a plain ``rollchat`` still starts the assistant. Returns the
    config's path."""
    path = user_config(user_config_dir)
    text = path.read_text(encoding="utf-8") if path.is_file() else ""
    data = _load(text, str(path)) if text.strip() else None
    if data is not None and not isinstance(data, dict):
        raise ConfigError(f"{path}: not a mapping of settings; edit it by hand")
    entry = {"file": str(file)}
    if data is None:  # empty, or comments only: they stay, the mapping goes after them
        new = (text.rstrip("\n") + "\n" if text.strip() else "") + _block(name, entry)
        _replace(path, new)
        return path
    agents = data.get("agents")
    if agents is None:
        from ruamel.yaml.comments import CommentedMap

        agents = data["agents"] = CommentedMap([("assistant", CommentedMap())])
        agents["assistant"].fa.set_flow_style()
    elif not isinstance(agents, dict):
        raise ConfigError(f"{path}: agents is not a mapping; edit it by hand")
    if name in agents:
        raise ConfigError(f"{path} already has an agent {name}; 'rollchat agents remove {name}' "
                          "first, or choose another name")
    agents[name] = entry
    _replace(path, _dump(data))
    return path


def _block(name: str, entry: dict[str, str]) -> str:
    data = {"agents": {"assistant": {}, name: entry}}
    return _dump(data)


def _dump(data: object) -> str:
    from io import StringIO

    out = StringIO()
    _yaml().dump(data, out)
    return out.getvalue()


def remove(user_config_dir: Path, name: str) -> Path:
    """Take the alias ``name`` out of the user config, keeping the rest as it was. ConfigError
    when there is no such alias, or it is an agent set up in the config (not only a file)."""
    path = user_config(user_config_dir)
    known = {a.name: a for a in aliases(user_config_dir)}
    if name not in known:
        listed = ", ".join(known) or "none"
        raise ConfigError(f"no agent {name} in {path} (agents there: {listed})")
    if not known[name].removable:
        raise ConfigError(f"agent {name} in {path} has settings besides its file; edit the "
                          "file to remove it")
    data = _load(path.read_text(encoding="utf-8"), str(path))
    assert isinstance(data, dict)
    del data["agents"][name]
    _replace(path, _dump(data))
    return path


def _replace(path: Path, text: str) -> None:
    """Check ``text`` loads as a config, then put it in place atomically (fsync, rename), the
    file's permissions kept (owner-only for a new one)."""
    from rollchat.config.file import load_file

    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}-{secrets.token_hex(4)}")
    try:
        mode = path.stat().st_mode & 0o777 if path.exists() else 0o600
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        try:
            load_file(tmp, str(path))
        except ConfigError as exc:
            raise ConfigError(f"{exc} (the change was not written)") from None
        os.replace(tmp, path)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot write it: {exc.strerror or exc}") from None
    finally:
        tmp.unlink(missing_ok=True)
