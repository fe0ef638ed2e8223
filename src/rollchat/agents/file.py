"""Agent files: a developer's agent in one Python file (``rollchat path/to/agent.py``, or
``agents: NAME: file: PATH`` in the config).

The file sets module-level names, all optional::

    name = "Weather"                 # shown in the chat and the transcript
    system_prompt = "You are ..."
    provider = "anthropic"           # auto | anthropic | openai | offline
    model = "claude-sonnet-5-5"
    approval = "ask"                 # ask | auto | never
    allow = ["get_weather"]          # tools (names or globs) that run without asking
    deny = ["delete_*"]              # tools that never run
    max_tool_rounds = 25
    skills = "skills"                # a folder of skills/NAME/SKILL.md, relative to the file
    tools = [get_weather]            # default: the public functions defined in the file

Loading runs the file (it is the user's code); a file that fails to import is one
``AgentFileError`` naming the file and the line (the CLI exits 2 on it)."""

from __future__ import annotations

import dataclasses
import importlib.util
import inspect
import re
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from rollchat.config.settings import AgentConfig
from rollchat.errors import ConfigError
from rollchat.providers import PROVIDER_CHOICES
from rollchat.tools import Tool

if TYPE_CHECKING:
    from rollchat.agents.frameworks import FrameworkAgent

APPROVAL_MODES = ("ask", "auto", "never")
_SETTINGS = ("name", "system_prompt", "provider", "model", "approval", "allow", "deny",
             "max_tool_rounds", "skills", "tools")


class AgentFileError(ConfigError):
    """An agent file that cannot be loaded: file, line and what went wrong."""


@dataclass(frozen=True)
class LoadedAgent:
    """What an agent file defines: its settings (only those it sets) and its tools; or the
    agent a framework built (``framework``: agents/frameworks/)."""

    path: Path
    settings: dict[str, Any]
    tools: tuple[Tool, ...]
    framework: FrameworkAgent | None = None


def agent_key(path: Path) -> str:
    """The agent's key (used in session ids) from the file's name: ``my agent.py`` -> my-agent."""
    stem = path.stem if path.stem != "agent" or path.parent.name in ("", ".") \
        else path.parent.name
    key = re.sub(r"[^A-Za-z0-9_-]+", "-", stem).strip("-_")[:64]
    return key or "agent"


def split_target(target: str) -> tuple[str, str | None]:
    """``path/to/agent.py:NAME`` or ``package.module:NAME`` -> the file or module, and NAME
    (None when not given)."""
    head, sep, tail = target.rpartition(":")
    if sep and tail.isidentifier() and head and not (len(head) == 1 and head.isalpha()):
        return head, tail
    return target, None


def load_agent_file(path: Path, display: str | None = None,
                    attribute: str | None = None) -> LoadedAgent:
    """Run the agent file at ``path`` and read its settings and tools, or the framework agent
    it defines (``attribute``: the one named; see agents/frameworks/)."""
    shown = display or str(path)
    dotted = attribute is not None and not path.is_file() and path.suffix != ".py" and all(
        part.isidentifier() for part in path.name.split("."))
    if not path.is_file() and not dotted:
        raise AgentFileError(f"{shown}: no such agent file")
    module = _import_module(path.name, shown) if dotted else _import(path.resolve(), shown)
    from rollchat.agents.frameworks import adapt, find_agent

    try:
        found = find_agent(module, attribute, shown)
        framework = adapt(found[1], found[0], shown) if found is not None else None
    except ConfigError as exc:
        raise AgentFileError(str(exc)) from None
    if framework is not None:
        own: dict[str, Any] = {"system_prompt": framework.instructions} \
            if framework.instructions.strip() else {}
        return LoadedAgent(path.resolve(), own, (), framework)
    settings = {name: getattr(module, name) for name in _SETTINGS if hasattr(module, name)}
    _check(settings, shown)
    functions = settings.pop("tools", None)
    if functions is None:
        functions = [f for n, f in vars(module).items() if not n.startswith("_")
                     and inspect.isfunction(f) and f.__module__ == module.__name__]
    from rollchat.tools.python import function_tool  # pydantic: only for an agent file

    tools: list[Tool] = []
    for fn in functions:
        try:
            tools.append(function_tool(fn))
        except ConfigError as exc:
            raise AgentFileError(f"{shown}:{_line_of(fn)}: {exc}") from None
    names = [t.name for t in tools]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise AgentFileError(f"{shown}: two tools are named {', '.join(twice)}")
    if "skills" in settings:
        settings["skills"] = (path.resolve().parent / settings["skills"]).resolve()
    return LoadedAgent(path.resolve(), settings, tuple(tools))


def _import_module(name: str, shown: str) -> ModuleType:
    """``package.module`` of ``package.module:NAME``, imported as Python imports it."""
    import importlib

    if "" not in sys.path and "." not in sys.path:
        sys.path.insert(0, "")  # the current directory, as `python -m` has it
    try:
        return importlib.import_module(name)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:
        if isinstance(exc, ModuleNotFoundError) and exc.name == name:
            raise AgentFileError(f"{shown}: no such agent file or module") from None
        _missing_framework(exc, Path(name), shown)
        raise AgentFileError(f"{shown}: cannot load the module: {type(exc).__name__}: "
                             f"{_first_line(exc)}") from None


def _import(path: Path, shown: str) -> ModuleType:
    name = "rollchat_agent_" + re.sub(r"\W", "_", path.stem)
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise AgentFileError(f"{shown}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and pydantic look the module up by name
    folder = str(path.parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)  # the file may import its neighbours, as `python agent.py`
    try:
        spec.loader.exec_module(module)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # SyntaxError, ImportError, SystemExit, anything it raised
        sys.modules.pop(name, None)
        _missing_framework(exc, path, shown)
        raise AgentFileError(f"{shown}:{_failing_line(exc, path)}: cannot load the agent "
                             f"file: {type(exc).__name__}: {_first_line(exc)}") from None
    return module


def _missing_framework(exc: BaseException, path: Path, shown: str) -> None:
    """An agent file whose framework is not installed: one line naming the package."""
    if not isinstance(exc, ModuleNotFoundError) or not exc.name:
        return
    from rollchat.agents.frameworks import package_for

    package = package_for(exc.name)
    if package is not None:
        raise AgentFileError(f"{shown}:{_failing_line(exc, path)}: the agent needs {package}, "
                             f"which is not installed (pip install {package})")


def _failing_line(exc: BaseException, path: Path) -> int | str:
    if isinstance(exc, SyntaxError) and exc.lineno and \
            Path(exc.filename or "").resolve() == path:
        return exc.lineno
    line: int | str = "?"
    for frame in traceback.extract_tb(exc.__traceback__):
        if Path(frame.filename).resolve() == path and frame.lineno is not None:
            line = frame.lineno  # the last line of the file on the way to the error
    return line


def _first_line(exc: BaseException) -> str:
    text = exc.msg if isinstance(exc, SyntaxError) and exc.msg else str(exc)
    return text.strip().splitlines()[0] if text.strip() else "(no message)"


def _line_of(fn: object) -> int | str:
    code = getattr(fn, "__code__", None)
    return code.co_firstlineno if code is not None else "?"


def _check(settings: dict[str, Any], shown: str) -> None:
    def bad(key: str, need: str) -> AgentFileError:
        value = repr(settings[key])
        return AgentFileError(f"{shown}: {key}: {need} (got {value[:60]})")

    for key in ("name", "system_prompt"):
        if key in settings and not (isinstance(settings[key], str) and settings[key].strip()):
            raise bad(key, "must be a non-empty string")
    if "provider" in settings and settings["provider"] not in PROVIDER_CHOICES:
        raise bad("provider", "must be one of " + ", ".join(PROVIDER_CHOICES))
    if "model" in settings and not (settings["model"] is None or (
            isinstance(settings["model"], str) and settings["model"].strip())):
        raise bad("model", "must be a model name, or None")
    if "approval" in settings and settings["approval"] not in APPROVAL_MODES:
        raise bad("approval", "must be one of " + ", ".join(APPROVAL_MODES))
    for key in ("allow", "deny"):
        value = settings.get(key, ())
        if isinstance(value, str) or not all(isinstance(v, str) and v for v in value):
            raise bad(key, "must be a list of tool names or globs")
        if key in settings:
            settings[key] = tuple(value)
    rounds = settings.get("max_tool_rounds", 1)
    if isinstance(rounds, bool) or not isinstance(rounds, int) or rounds < 1:
        raise bad("max_tool_rounds", "must be a positive integer")
    if "skills" in settings and not isinstance(settings["skills"], (str, Path)):
        raise bad("skills", "must be a folder path")
    tools = settings.get("tools", [])
    if isinstance(tools, (str, bytes)) or not hasattr(tools, "__iter__"):
        raise bad("tools", "must be a list of functions")
    if "tools" in settings:
        settings["tools"] = list(tools)
        for fn in settings["tools"]:
            if not callable(fn):
                raise AgentFileError(f"{shown}: tools: {fn!r} is not a function")


def apply_agent_file(agent: AgentConfig, loaded: LoadedAgent,
                     keep: frozenset[str] = frozenset()) -> AgentConfig:
    """``agent`` with the agent file's settings; ``keep``: settings a flag or the environment
    set (provider, model), which win over the file."""
    s = loaded.settings
    changes: dict[str, Any] = {"file": loaded.path,
                               "tool_names": tuple(t.name for t in loaded.tools)}
    for key in ("name", "system_prompt", "provider", "model", "approval", "allow", "deny",
                "max_tool_rounds"):
        if key in s and key not in keep and key not in agent.set_in_config:
            changes[key] = s[key]
            if key in ("allow", "deny"):  # with the rules Claude Code's settings added
                changes[key] = (*s[key], *(r for r in getattr(agent, key) if r not in s[key]))
    if "skills" in s:
        changes["skills_dir"] = s["skills"]
    return dataclasses.replace(agent, **changes)
