"""Agents built with agent frameworks, run behind the Runner seam (engine/runner.py): which
object of an agent file is the agent, which adapter runs it, and what an adapter returns.

How an adapter plugs in: a module ``rollchat.agents.frameworks.NAME`` (the ONLY importer of its
framework) with one function ``adapt(obj: object, name: str) -> FrameworkAgent``, and one
``Kind`` row in ``KINDS`` below naming the framework's top-level modules (an object whose type
comes from one of them is that kind's: nothing is imported to recognize it), its PyPI package
(named when the file's import fails) and the adapter module. The adapter's ``Runner`` converts
rollchat's Messages to the framework's messages each turn, streams the framework's events as
``RunEvent`` values and asks ``RunRequest.approve`` before each tool call through the
framework's own mechanism; its ``Provider`` is the agent's model as a plain call (no tools) for
summaries and the restoration's acknowledgment. bridge.py runs an async framework on the one
shared event loop, run by the thread waiting for the run's events (the chat's), where its
approvals are answered too.
"""

from __future__ import annotations

import importlib
import inspect
from dataclasses import dataclass
from types import ModuleType

from rollchat.engine.runner import Runner
from rollchat.errors import ConfigError
from rollchat.providers.base import Provider


@dataclass(frozen=True)
class Kind:
    """One framework rollchat runs agents of."""

    label: str  # how the accepted objects are named in messages: "a Strands Agent"
    modules: tuple[str, ...]  # top-level modules whose types are this framework's
    package: str  # the PyPI package to install
    adapter: str  # the module under rollchat.agents.frameworks
    types: tuple[str, ...] = ()  # the agent types' names (None of them: any type of modules)


KINDS: tuple[Kind, ...] = (
    Kind("a Strands Agent (strands.Agent)", ("strands",), "strands-agents", "strands",
         ("Agent",)),
    Kind("an OpenAI Agents SDK Agent (agents.Agent)", ("agents",), "openai-agents",
         "openai_agents", ("Agent",)),
    Kind("a Pydantic AI Agent (pydantic_ai.Agent)", ("pydantic_ai",), "pydantic-ai",
         "pydantic_ai", ("Agent",)),
    Kind("a LangGraph compiled graph with messages (langchain create_agent, "
         "langgraph create_react_agent)", ("langgraph", "langchain"), "langgraph",
         "langgraph", ("CompiledStateGraph", "CompiledGraph", "Pregel")),
    Kind("a Google ADK agent (google.adk.agents.LlmAgent, SequentialAgent, LoopAgent, "
         "ParallelAgent: any BaseAgent; or an App of one)", ("google.adk",), "google-adk", "adk",
         ("BaseAgent", "App")),
)
FUNCTION = Kind("a function root_agent(query) -> str (async, or a generator of text)", (),
                "", "function")
ACCEPTED = "; ".join(k.label for k in (*KINDS, FUNCTION))
NAMES = ("root_agent", "agent")  # looked up in this order, as the frameworks' own tools do


@dataclass(frozen=True)
class FrameworkAgent:
    """A framework's agent ready for a session: its runner, its model as a plain call
    (``provider``, named ``provider_name`` as rollchat's registry is not), the model's name
    (its window, its prices), the agent's own instructions (the system prompt rollchat adds
    project instructions and memory to), and whether it has tools of its own."""

    framework: str
    name: str
    model: str
    runner: Runner
    provider: Provider
    instructions: str = ""
    has_tools: bool = False
    no_summaries: str | None = None


def kind_of(obj: object) -> Kind | None:
    """The framework ``obj`` belongs to (by its type's module and name, or a function's
    shape), None when rollchat does not know it."""
    if inspect.isfunction(obj) or inspect.ismethod(obj):
        return FUNCTION
    for cls in type(obj).__mro__:
        module = cls.__module__ or ""
        for kind in KINDS:
            if any(module == m or module.startswith(m + ".") for m in kind.modules) and (
                    not kind.types or cls.__name__ in kind.types):
                return kind
    return None


def find_agent(module: ModuleType, attribute: str | None, shown: str) -> tuple[str, object] | None:
    """The agent object of an agent file: ``attribute`` when given, else ``root_agent``, else
    ``agent``, else the one framework agent the module defines; None when the module is a
    rollchat agent file (it defines none of these)."""
    names = vars(module)
    if attribute is not None:
        if attribute not in names:
            raise ConfigError(f"{shown}: defines no {attribute}")
        return attribute, names[attribute]
    for name in NAMES:
        if name in names and (kind_of(names[name]) is not FUNCTION
                              or _own(names[name], module)):
            return name, names[name]
    found = [(n, v) for n, v in names.items() if not n.startswith("_")
             and not inspect.isclass(v) and not inspect.isfunction(v)
             and kind_of(v) is not None]
    if len(found) > 1:
        raise ConfigError(f"{shown}: defines {len(found)} agents ("
                          f"{', '.join(n for n, _ in found)}); name one: {shown}:NAME")
    return found[0] if found else None


def _own(fn: object, module: ModuleType) -> bool:
    return getattr(fn, "__module__", None) == module.__name__


def adapt(obj: object, name: str, shown: str) -> FrameworkAgent:
    """The framework agent of ``obj`` (ConfigError: one line listing what rollchat runs)."""
    kind = kind_of(obj)
    if kind is None:
        raise ConfigError(f"{shown}: {name} is a {type(obj).__module__}.{type(obj).__name__}, "
                          f"which rollchat cannot run; it runs {ACCEPTED}")
    adapter = f"rollchat.agents.frameworks.{kind.adapter}"
    try:
        module = importlib.import_module(adapter)
    except ModuleNotFoundError as exc:
        if exc.name != adapter:
            raise
        raise ConfigError(f"{shown}: {name} is {kind.label}, which this rollchat cannot run "
                          "yet (docs/frameworks.md)") from None
    try:
        agent: FrameworkAgent = module.adapt(obj, name)
    except ConfigError as exc:  # what the adapter cannot run of its framework
        raise ConfigError(f"{shown}: {exc}") from None
    return agent


def package_for(missing: str) -> str | None:
    """The PyPI package of a framework module an agent file failed to import."""
    for kind in KINDS:
        if any(missing == m or missing.startswith(m + ".") for m in kind.modules):
            return kind.package
    return None
