"""The built-in ``memory_search`` tool: the facts and episodes of the agent's memory that match
a query (FTS5 bm25), read-only."""

from __future__ import annotations

from collections.abc import Mapping

from rollchat.errors import RollchatError
from rollchat.memory.store import MemoryStore
from rollchat.providers.base import ToolSpec
from rollchat.tools import MEMORY_TOOL_NAME, Tool

DEFAULT_LIMIT = 5
MAX_LIMIT = 20
MAX_QUERY_CHARS = 500
EPISODE_CHARS = 1_500

MEMORY_DESCRIPTION = (
    "Search your long-term memory of this user and project: facts remembered from earlier "
    "sessions (preferences, background, project facts, decisions, contacts, patterns) and "
    "episodes (the summaries of earlier sessions). Returns the best matches for the words "
    "of 'query', facts first."
)
MEMORY_PARAMETERS: Mapping[str, object] = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "description": "What to look for, in a few words."},
        "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT,
                  "description": f"How many facts and how many episodes. Default "
                                 f"{DEFAULT_LIMIT}."},
    },
    "required": ["query"],
    "additionalProperties": False,
}


class MemorySearchError(RollchatError):
    """Bad arguments to memory_search (the message goes back to the model)."""


def search_memory(store: MemoryStore, arguments: Mapping[str, object]) -> str:
    """The tool's answer to ``arguments``: facts, then episodes, as plain text."""
    query, limit = arguments.get("query"), arguments.get("limit", DEFAULT_LIMIT)
    if not isinstance(query, str) or not query.strip():
        raise MemorySearchError("'query' must be a non-empty string")
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise MemorySearchError(f"'limit' must be an integer from 1 to {MAX_LIMIT}")
    facts, episodes = store.search(query[:MAX_QUERY_CHARS], limit)
    if not facts and not episodes:
        return f"Nothing in memory matches {query[:80]!r}."
    lines = []
    if facts:
        lines.append(f"Facts ({len(facts)}):")
        lines += [f"- [{f.id}] {f.text} ({f.category}; {f.source})" for f in facts]
    for e in episodes:
        summary = e.summary if len(e.summary) <= EPISODE_CHARS else \
            e.summary[:EPISODE_CHARS] + " [...]"
        title = f" {e.title}" if e.title else ""
        lines += ["", f"Episode: session {e.session_id}{title} ({e.span})", summary]
    return "\n".join(lines)


def memory_tool(store: MemoryStore, *, companion: bool = False) -> Tool:
    spec = ToolSpec(MEMORY_TOOL_NAME, MEMORY_DESCRIPTION, MEMORY_PARAMETERS)
    brief = ToolSpec(MEMORY_TOOL_NAME, "Search what you remember of this user and project "
                     "from earlier sessions.", {"type": "object", "properties": {
                         "query": {"type": "string"}}, "required": ["query"]})
    return Tool(spec, lambda arguments: search_memory(store, arguments), companion=companion,
                read_only=True, brief=brief)
