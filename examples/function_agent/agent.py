"""A plain function as the agent (as basic-agent-chat-loop runs one): `rollchat examples/function_agent/agent.py`.

rollchat calls `root_agent` with what you typed (and `history`, the conversation so far as
role/content dicts, because it asks for it) and shows what it yields as it comes. It runs
offline; with no model of its own its summaries are rollchat's local ones (or set
summary.provider). Any function works: `str`, `async def`, or a generator of text.
"""

from collections import Counter


def root_agent(query: str, history: list[dict[str, str]]):
    """Counts words, and remembers what you asked."""
    words = query.split()
    yield f"{len(words)} word{'s' if len(words) != 1 else ''}"
    common = Counter(w.lower() for w in words).most_common(1)
    if common:
        yield f", most often {common[0][0]!r}"
    asked = sum(1 for m in history if m["role"] == "user")
    yield f". You asked {asked} time{'s' if asked != 1 else ''} before."
