"""An OpenAI Agents SDK agent run by rollchat: `rollchat examples/openai_agents_agent/agent.py`.

Needs `pip install openai-agents` (or rollchat's `frameworks` extra). OPENAI_API_KEY, and
OPENAI_BASE_URL for another OpenAI-compatible server; EXAMPLE_MODEL names the model (default
gpt-5.4-mini). rollchat keeps the transcript, compacts and resumes; the SDK runs the model and the
tools, and every tool call asks rollchat's approval first (needs_approval).
"""

import os

from agents import Agent, OpenAIChatCompletionsModel, function_tool
from openai import AsyncOpenAI


@function_tool
def word_count(text: str) -> str:
    """Count the words of a text.

    Args:
        text: The text to count.
    """
    return f"{len(text.split())} words"


client = AsyncOpenAI(api_key=os.environ.get("OPENAI_API_KEY", ""),
                     base_url=os.environ.get("OPENAI_BASE_URL") or None)
agent = Agent(
    name="Counter",
    instructions="You are a helpful assistant. Use word_count when asked to count words.",
    tools=[word_count],
    model=OpenAIChatCompletionsModel(model=os.environ.get("EXAMPLE_MODEL", "gpt-5.4-mini"),
                                     openai_client=client),
)
