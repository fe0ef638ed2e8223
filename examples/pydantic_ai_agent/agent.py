"""A Pydantic AI agent with one tool, as a Pydantic AI user writes it: run it with
``rollchat examples/pydantic_ai_agent/agent.py``. Its OpenAI model client reads OPENAI_API_KEY
and OPENAI_BASE_URL (any OpenAI-compatible server); rollchat keeps the transcript, compacts,
resumes and asks before each tool call."""

from __future__ import annotations

import os

from pydantic_ai import Agent
from pydantic_ai.models.openai import OpenAIChatModel

model = OpenAIChatModel(os.environ.get("EXAMPLE_MODEL", "gpt-5.4-mini"))
agent = Agent(model, instructions="You add numbers with the add tool and answer briefly.")


@agent.tool_plain
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b
