"""A Strands agent, as its developer writes it, run by rollchat: `rollchat examples/strands_agent/agent.py`.

Needs `pip install strands-agents` (or rollchat's `frameworks` extra). The model is an
OpenAI-compatible one: OPENAI_API_KEY, and OPENAI_BASE_URL for another server (a local one
works); EXAMPLE_MODEL names the model (default gpt-5.4-mini). rollchat keeps the transcript,
compacts and resumes; Strands runs the model and the tools, and asks rollchat before each call.
"""

import os

from strands import Agent, tool
from strands.models.openai import OpenAIModel


@tool
def word_count(text: str) -> str:
    """Count the words of a text.

    Args:
        text: The text to count.
    """
    return f"{len(text.split())} words"


client_args = {"api_key": os.environ.get("OPENAI_API_KEY", "")}
if os.environ.get("OPENAI_BASE_URL"):
    client_args["base_url"] = os.environ["OPENAI_BASE_URL"]

root_agent = Agent(
    model=OpenAIModel(client_args=client_args,
                      model_id=os.environ.get("EXAMPLE_MODEL", "gpt-5.4-mini")),
    tools=[word_count],
    system_prompt="You are a helpful assistant. Use word_count when asked to count words.",
    callback_handler=None,  # rollchat draws the stream
)
