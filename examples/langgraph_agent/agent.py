"""A LangChain agent graph (``create_agent``, a LangGraph compiled graph) with one tool: run it
with ``rollchat examples/langgraph_agent/agent.py``. ChatOpenAI reads OPENAI_API_KEY and
OPENAI_BASE_URL (any OpenAI-compatible server); rollchat keeps the transcript, compacts,
resumes and asks before each tool call (LangGraph's human-in-the-loop breakpoint)."""

from __future__ import annotations

import os

from langchain.agents import create_agent
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


root_agent = create_agent(
    ChatOpenAI(model=os.environ.get("EXAMPLE_MODEL", "gpt-5.4-mini"), stream_usage=True),
    tools=[add], system_prompt="You add numbers with the add tool and answer briefly.")
