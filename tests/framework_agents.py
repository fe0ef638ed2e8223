"""Shared by the framework adapters' tests: agent files built with each framework, their model
clients pointed at the local OpenAI wire server (WIRE_URL), run through the CLI as a user does."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from rollchat.domain import Message, ToolCall, ToolResult, ToolUse, Turn
from rollchat.engine.runner import RunRequest
from rollchat.storage.transcript import SUMMARY_END, SUMMARY_START, parse
from tests.e2e import _STARTING_ENV, LITELLM_OFFLINE, _clean_env, run_piped, write_config
from tests.wire_servers import Reply, WireServer, last_user_text, text

STRANDS_AGENT = '''
import os
from strands import Agent, tool
from strands.models.openai import OpenAIModel


@tool
def word_count(text: str) -> str:
    """Count words.

    Args:
        text: The text.
    """
    return f"{len(text.split())} words"


root_agent = Agent(
    model=OpenAIModel(client_args={"base_url": os.environ["WIRE_URL"], "api_key": "test"},
                      model_id="wire-model"),
    tools=[word_count], system_prompt="You count words.", callback_handler=None)
'''

OPENAI_AGENT = '''
import os
from agents import Agent, OpenAIChatCompletionsModel, function_tool
from openai import AsyncOpenAI


@function_tool
def word_count(text: str) -> str:
    """Count words.

    Args:
        text: The text.
    """
    return f"{len(text.split())} words"


client = AsyncOpenAI(base_url=os.environ["WIRE_URL"], api_key="test")
agent = Agent(name="Counter", instructions="You count words.", tools=[word_count],
              model=OpenAIChatCompletionsModel(model="wire-model", openai_client=client))
'''

PYDANTIC_AI_AGENT = '''
import os
from pydantic_ai import Agent
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

agent = Agent(OpenAIChatModel("wire-model", provider=OpenAIProvider(
    base_url=os.environ["WIRE_URL"], api_key="test")), instructions="You count words.")


@agent.tool_plain
def word_count(text: str) -> str:
    """Count words."""
    return f"{len(text.split())} words"
'''

LANGGRAPH_AGENT = '''
import os
from langchain.agents import create_agent
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI


@tool
def word_count(text: str) -> str:
    """Count words."""
    return f"{len(text.split())} words"


root_agent = create_agent(
    ChatOpenAI(model="wire-model", base_url=os.environ["WIRE_URL"], api_key="test",
               stream_usage=True), tools=[word_count], system_prompt="You count words.")
'''

_ADK_COUNTER = '''
import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # litellm: no fetch at start
from google.adk.agents import LlmAgent
from google.adk.models.lite_llm import LiteLlm
from google.adk.tools.tool_context import ToolContext


def word_count(text: str, tool_context: ToolContext) -> str:
    """DOC

    Args:
        text: The text.
    """
    tool_context.state["counted"] = tool_context.state.get("counted", 0) + 1
    return SAID


root_agent = LlmAgent(
    name="counter", instruction="You count words.", tools=[word_count],
    model=LiteLlm(model="openai/wire-model", api_base=os.environ["WIRE_URL"], api_key="test"))
'''


def adk_counter(says_count: bool) -> str:
    """An ADK agent file whose tool word_count counts its calls in ADK's session state
    (``counted``); its result says how many words ("2 words") and, with ``says_count``, which
    call it was ("2 words, count number 1")."""
    if says_count:
        doc, said = ("Count words, and how many times it counted.",
                     "f\"{len(text.split())} words, count number {tool_context.state['counted']}\"")
    else:
        doc, said = "Count words.", "f\"{len(text.split())} words\""
    return _ADK_COUNTER.replace("DOC", doc).replace("SAID", said)


ADK_AGENT = adk_counter(says_count=False)

# a small window, so that a few long messages compact on their own
SMALL_WINDOW = """
models:
  wire-model:
    context_window: 2000
session:
  compact_threshold: 0.5
"""


# What a child that runs an agent of each framework imports anyway (by the agent files' first
# import: a key below), for the fork server of that framework's children (tests/forkserver.py):
# the modules the tests' agent files import, and rollchat's adapter.
PRELOADS = {
    "strands": ("strands", "strands.models.openai", "rollchat.agents.frameworks.strands"),
    "agents": ("agents", "rollchat.agents.frameworks.openai_agents"),
    "pydantic_ai": ("pydantic_ai", "pydantic_ai.models.openai", "pydantic_ai.providers.openai",
                    "rollchat.agents.frameworks.pydantic_ai"),
    "langchain": ("langchain.agents", "langchain.tools", "langchain_core.tools",
                  "langchain_core.messages", "langchain_openai", "langgraph.types",
                  "rollchat.agents.frameworks.langgraph"),
    "google.adk": ("google.adk.agents", "google.adk.models.lite_llm",
                   "google.adk.tools.tool_context", "litellm", "rollchat.agents.frameworks.adk"),
}
_IMPORT = re.compile(r"^(?:from|import) ([\w.]+)", re.MULTILINE)


def one_worker(framework: str) -> pytest.MarkDecorator:
    """Under xdist (the README's ``--dist loadgroup``) every test of ``framework`` (its test id:
    "strands", "openai-agents", "pydantic-ai", "langgraph", "adk") runs on the same worker, so
    the framework is imported in one worker and its fork server started once, not in each."""
    return pytest.mark.xdist_group(f"framework-{framework}")


# The first test of Google ADK's group to run imports ADK and litellm in the worker (8 s of
# CPU, over two minutes on a loaded 2-core machine): each of its in-process tests may be that
# one, so each is bounded as test_adk_chat's chats are.
ADK_IMPORT_TIMEOUT = pytest.mark.timeout(300)


def by_framework(*frameworks: str) -> list[Any]:
    """Fixture params: each framework (a test id) on its worker (``one_worker``)."""
    return [pytest.param(f, id=f, marks=[one_worker(f)] + ([ADK_IMPORT_TIMEOUT] if f == "adk"
                                                           else []))
            for f in frameworks]


def preloaded(source: str) -> tuple[str, ...]:
    """The fork server's preload for a child running the agent file ``source``: its
    framework's (the first of its imports that names one), or none."""
    for name in _IMPORT.findall(source):
        for framework, modules in PRELOADS.items():
            if name == framework or name.startswith(framework + "."):
                return modules
    return ()


def framework_env(home: Path, preload: tuple[str, ...], **extra: str) -> dict[str, str]:
    """``clean_env`` for a child of the server of ``preload``, from this process's environment
    as it started, as the server's is: not with what a framework imported in this process left
    in it (litellm's import sets LITELLM_MODE, which the server's import of it read unset: the
    child would run as a new interpreter). litellm imported: its price list read from the
    package, as the ADK agent files set it before importing it."""
    return _clean_env(_STARTING_ENV, home, **(LITELLM_OFFLINE if "litellm" in preload else {}),
                      **extra)


def chat(tmp_path: Path, server: WireServer, source: str, lines: str, *args: str,
         config: str | None = None, name: str = "agent.py",
         timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """``rollchat AGENT.py`` with ``lines`` piped in, the agent's client at ``server``; forked
    from the fork server that has the agent's framework imported (a new process still: what
    an earlier chat left in memory is not there)."""
    agent = tmp_path / name
    if not agent.exists():
        agent.write_text(source, encoding="utf-8")
    flags = ["--config", str(write_config(tmp_path / "config.yaml", config))] if config else []
    preload = preloaded(source)
    env = framework_env(tmp_path / "home", preload, WIRE_URL=server.url,
                        OPENAI_AGENTS_DISABLE_TRACING="1")
    return run_piped(tmp_path, lines, str(agent), *flags, *args, env=env, timeout=timeout,
                     preload=preload)


def sessions(tmp_path: Path) -> list[Path]:
    return sorted((tmp_path / "sessions").glob("*.md"), key=lambda p: p.stat().st_mtime_ns)


def turns(path: Path) -> list[Turn]:
    return list(parse(path.read_text(encoding="utf-8")).turns)


def calls_and_results(turn: Turn) -> tuple[list[ToolUse], list[ToolResult]]:
    return ([b for b in turn.blocks if isinstance(b, ToolUse)],
            [b for b in turn.blocks if isinstance(b, ToolResult)])


def tool_messages(body: dict[str, object]) -> list[dict[str, object]]:
    """The tool results a Chat Completions request carries."""
    return [m for m in body["messages"] if isinstance(m, dict) and m.get("role") == "tool"]


# ---------------------------------------------------------------- one agent per framework


@dataclass(frozen=True)
class Adder:
    """A framework's agent with one tool, ``add`` (each call it runs appended to ``ran``),
    and the instructions "You add numbers.", its real OpenAI client at the wire server; and
    the rollchat adapter that runs it."""

    framework: str
    adapter: Any  # the module rollchat.agents.frameworks.NAME
    build: Callable[[WireServer, list[tuple[int, int]]], Any]

    def adapt(self, server: WireServer, ran: list[tuple[int, int]] | None = None) -> Any:
        return self.adapter.adapt(self.build(server, [] if ran is None else ran), "agent")


def _pydantic_ai_adder(server: WireServer, ran: list[tuple[int, int]]) -> Any:
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    model = OpenAIChatModel("gpt-4o-mini",
                            provider=OpenAIProvider(base_url=server.url, api_key="test"))
    agent: Agent[None, str] = Agent(model, instructions="You add numbers.")

    @agent.tool_plain
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        ran.append((a, b))
        return a + b

    return agent


def _langgraph_adder(server: WireServer, ran: list[tuple[int, int]]) -> Any:
    from langchain.agents import create_agent
    from langchain_core.tools import tool as as_tool
    from langchain_openai import ChatOpenAI

    @as_tool
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        ran.append((a, b))
        return a + b

    model = ChatOpenAI(model="gpt-4o-mini", base_url=server.url, api_key="test",
                       stream_usage=True)
    return create_agent(model, tools=[add], system_prompt="You add numbers.")


def adk_adder(server: WireServer, ran: list[tuple[int, int]]) -> Any:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no fetch from the internet
    from google.adk.agents import LlmAgent
    from google.adk.models.lite_llm import LiteLlm
    from google.adk.tools.tool_context import ToolContext

    def add(a: int, b: int, tool_context: ToolContext) -> int:
        """Add two numbers."""
        ran.append((a, b))
        tool_context.state["adds"] = tool_context.state.get("adds", 0) + 1
        return a + b

    return LlmAgent(name="adder", instruction="You add numbers.", tools=[add],
                    model=LiteLlm(model="openai/gpt-4o-mini", api_base=server.url,
                                  api_key="test"))


# framework: (the module to have installed, the adapter's module, the agent's builder)
ADDERS = {"pydantic-ai": ("pydantic_ai", "pydantic_ai", _pydantic_ai_adder),
          "langgraph": ("langchain.agents", "langgraph", _langgraph_adder)}
# and Google ADK, whose tool results and instructions reach the
# model in shapes of its own (tests/agents/frameworks/test_adk.py): for the tests where the
# shapes are the same
EVERY_ADDER = {**ADDERS, "adk": ("google.adk", "adk", adk_adder)}


def adder_for(framework: str) -> Adder:
    """The framework's Adder (skipped where the framework is not installed)."""
    module, adapter, build = EVERY_ADDER[framework]
    if framework == "adk":
        require_adk()
    else:
        pytest.importorskip(module)
    return Adder(framework, importlib.import_module(f"rollchat.agents.frameworks.{adapter}"),
                 build)


@pytest.fixture(params=by_framework(*sorted(ADDERS)))
def adder(request: pytest.FixtureRequest) -> Adder:
    """Each framework's Adder in turn."""
    return adder_for(request.param)


@pytest.fixture(params=by_framework(*sorted(EVERY_ADDER)))
def any_adder(request: pytest.FixtureRequest) -> Adder:
    """Each framework's Adder in turn, Google ADK's too."""
    return adder_for(request.param)


def run_request(user: str, history: tuple[Message, ...] = (), refuse: str | None = None,
                asked: list[ToolCall] | None = None) -> RunRequest:
    """A turn for a Runner (the project's rule as rollchat's system prompt), each call it
    asks about appended to ``asked`` and answered ``refuse`` (None: it may run)."""
    def approve(call: ToolCall) -> str | None:
        (asked if asked is not None else []).append(call)
        return refuse

    return RunRequest("Project rule: be brief.", history, Message("user", user), approve)


def require_adk() -> None:
    """Skip unless google-adk and litellm are installed (the frameworks extra has them).

    `find_spec("google.adk")` raises rather than answers None when no `google` package exists."""
    for name in ("google.adk", "litellm"):
        try:
            found = importlib.util.find_spec(name)
        except ModuleNotFoundError:
            found = None
        if found is None:
            pytest.skip("google-adk and litellm are not installed (pip install google-adk litellm)")


SUMMARY = (f"{SUMMARY_START}\n**Background Context:** Initial session.\n\n"
           "**Current Session Summary:**\n**Topics Discussed:**\n- the zanzibar ferry\n\n"
           "**Decisions Made:**\n- take the morning boat\n\n**Pending:**\n- buy tickets\n"
           f"{SUMMARY_END}")


def asks_summary(body: dict[str, Any]) -> bool:
    """A summary request: the chat's prefix with an instruction, or the separate request."""
    said = last_user_text(body)
    return "<summary-request>" in said or said.startswith("Summarize the session")


def summarizing(body: dict[str, Any]) -> Reply:
    """The model: the summary above when asked for one, else an echo of the user's words."""
    return text(SUMMARY) if asks_summary(body) else text(f"echo: {last_user_text(body)[:40]}")
