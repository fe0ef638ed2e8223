"""rollchat: a terminal chat loop for LLM agents that never runs out of context."""

__version__ = "0.1.0"
