"""Shared by the framework adapters' tests: agent files built with each framework, their model
clients pointed at the local OpenAI wire server (WIRE_URL), run through the CLI as a user does."""

from __future__ import annotations

import subprocess
from pathlib import Path

from rollchat.domain import ToolResult, ToolUse, Turn
from rollchat.storage.transcript import parse
from tests.e2e import clean_env, run_piped, write_config
from tests.wire_servers import WireServer

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

ADK_AGENT = '''
import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # litellm: no fetch at start
from google.adk.agents import LlmAgent
from google.adk.models.lite_llm import LiteLlm
from google.adk.tools.tool_context import ToolContext


def word_count(text: str, tool_context: ToolContext) -> str:
    """Count words.

    Args:
        text: The text.
    """
    tool_context.state["counted"] = tool_context.state.get("counted", 0) + 1
    return f"{len(text.split())} words"


root_agent = LlmAgent(
    name="counter", instruction="You count words.", tools=[word_count],
    model=LiteLlm(model="openai/wire-model", api_base=os.environ["WIRE_URL"], api_key="test"))
'''

# a small window, so that a few long messages compact on their own
SMALL_WINDOW = """
models:
  wire-model:
    context_window: 2000
session:
  compact_threshold: 0.5
"""


def chat(tmp_path: Path, server: WireServer, source: str, lines: str, *args: str,
         config: str | None = None, name: str = "agent.py",
         timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """``rollchat AGENT.py`` with ``lines`` piped in, the agent's client at ``server``."""
    agent = tmp_path / name
    if not agent.exists():
        agent.write_text(source, encoding="utf-8")
    flags = ["--config", str(write_config(tmp_path / "config.yaml", config))] if config else []
    env = clean_env(tmp_path / "home", WIRE_URL=server.url, OPENAI_AGENTS_DISABLE_TRACING="1")
    return run_piped(tmp_path, lines, str(agent), *flags, *args, env=env, timeout=timeout)


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
