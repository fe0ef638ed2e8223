"""``rollchat mcp``: the saved sessions over the Model Context Protocol (stdio), served with the
official SDK's ``MCPServer``. Tools: list_sessions, search_sessions, read_session and
compact_session (the JSON of ``rollchat compact --json``); each session is also a resource,
``rollchat://sessions/{id}`` (its markdown). Stdout is the protocol's channel: nothing here
prints, and the SDK logs to stderr."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Literal

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceNotFoundError, ToolError
from mcp_types import Resource

from rollchat import __version__
from rollchat.compaction.saved import SummaryModel, compact, title_of
from rollchat.errors import RollchatError, StoreError
from rollchat.storage.export import blocks_json
from rollchat.storage.listing import SessionInfo
from rollchat.storage.store import SessionStore

if TYPE_CHECKING:
    from rollchat.config.settings import Config
    from rollchat.domain import Transcript

URI_PREFIX = "rollchat://sessions/"
URI_TEMPLATE = URI_PREFIX + "{session_id}"
MAX_LIMIT = 500  # list_sessions and search_sessions answer at most this many at once
# read_session answers a page at a time: a client puts the answer in a model's context (Claude
# Code refuses a tool result over 25,000 tokens), and a session file can be 64 MiB
PAGE_CHARS = 80_000
MAX_PAGE_CHARS = 1_000_000
INSTRUCTIONS = (
    "rollchat's saved chat sessions. list_sessions and search_sessions find a session; "
    "compact_session gives its structured summary (topics, decisions, pending items, files), "
    "which is usually what you need; read_session gives the whole transcript.")


class SessionsServer(MCPServer[Any]):
    """MCPServer whose resource list is the sessions directory as it is now."""

    def __init__(self, store: SessionStore) -> None:
        super().__init__("rollchat", instructions=INSTRUCTIONS, version=__version__,
                         log_level="WARNING")
        self.store = store

    async def list_resources(self) -> list[Resource]:
        import anyio.to_thread

        listing = await anyio.to_thread.run_sync(self.store.list_sessions)
        return [Resource(uri=URI_PREFIX + info.session_id, name=info.session_id,
                         title=title_of(info), mime_type="text/markdown",
                         description=_describe(info)) for info in listing.sessions]


def _describe(info: SessionInfo) -> str:
    summary = "summarized" if info.has_summary else "no summary yet"
    return (f"{info.agent}, {info.date:%Y-%m-%d %H:%M}, {info.queries} "
            f"quer{'y' if info.queries == 1 else 'ies'}, {summary}")


def _check_limit(limit: int, offset: int = 0) -> None:
    if not 1 <= limit <= MAX_LIMIT:
        raise ToolError(f"limit must be between 1 and {MAX_LIMIT} (got {limit})")
    if offset < 0:
        raise ToolError(f"offset must be 0 or more (got {offset})")


def session_entry(info: SessionInfo) -> dict[str, Any]:
    return {"id": info.session_id, "number": info.number, "title": title_of(info),
            "date": info.date.isoformat(), "agent": info.agent, "model": info.model,
            "queries": info.queries, "tokens": info.tokens, "has_summary": info.has_summary,
            "parent": info.resumed_from, "continued_in": list(info.continued_in)}


def transcript_json(transcript: Transcript) -> dict[str, Any]:
    """A parsed session as JSON: header, turns (tool calls included) and summary."""
    h, s = transcript.header, transcript.summary
    return {
        "id": h.session_id, "date": h.date.isoformat(), "agent": h.agent, "model": h.model,
        "provider": h.provider, "parent": h.resumed_from, "forked": h.forked,
        "continued_in": list(h.continued_in), "queries": h.total_queries,
        "tokens": h.total_tokens,
        "turns": [{"kind": t.kind, "number": t.number, "started": t.started.isoformat(),
                   "user": t.user, "blocks": blocks_json(t), "status": t.status,
                   "error": t.error, "tokens": t.usage.total}
                  for t in transcript.turns],
        "summary": None if s is None else {
            "background": s.background, "topics": list(s.topics),
            "decisions": list(s.decisions), "pending": list(s.pending),
            "files": list(s.artifacts), "timeline": list(s.timeline),
            "fallback": s.fallback},
    }


def markdown_page(text: str, session_id: str, offset: int, max_chars: int) -> str:
    """Characters ``offset`` to ``offset + max_chars`` of a session's markdown; when more
    follows, a last line says where the page ends and how to read on."""
    if offset and offset >= len(text):
        raise ToolError(f"offset {offset:,} is past the end of the session "
                        f"({len(text):,} characters)")
    end = min(len(text), offset + max_chars)
    page = text[offset:end]
    if end < len(text):
        page += (f"\n\n[rollchat: characters {offset:,}-{end:,} of {len(text):,}; read on with "
                 f'read_session(session="{session_id}", offset={end})]')
    return page


def transcript_page(transcript: Transcript, offset: int, max_chars: int) -> dict[str, Any]:
    """``transcript_json`` from turn ``offset``, as many turns as fit ``max_chars`` (one at
    least, its long texts cut, saying so); ``next_offset``: the turn to read on from."""
    whole = transcript_json(transcript)
    turns = whole["turns"]
    if offset and offset >= len(turns):
        raise ToolError(f"offset {offset} is past the last turn (the session has "
                        f"{len(turns)})")
    page: list[dict[str, Any]] = []
    used = len(json.dumps({**whole, "turns": []}, ensure_ascii=False))
    for item in turns[offset:]:
        size = len(json.dumps(item, ensure_ascii=False))
        if page and used + size > max_chars:
            break
        if size > max_chars - used:
            item = _cut_turn(item, max(max_chars - used, 1_000))
            size = len(json.dumps(item, ensure_ascii=False))
        page.append(item)
        used += size
    after = offset + len(page)
    return {**whole, "turns": page, "turns_total": len(turns), "offset": offset,
            "next_offset": after if after < len(turns) else None}


def _cut_turn(item: dict[str, Any], room: int) -> dict[str, Any]:
    """A turn made to fit ``room`` characters: its texts cut (saying how long they were),
    then, if it still does not fit, its last blocks left out (counted)."""
    def size(value: Any) -> int:
        return len(json.dumps(value, ensure_ascii=False))

    limit = max(room // (3 + len(item["blocks"])), 200)

    def cut(text: Any) -> Any:
        if not isinstance(text, str) or len(text) <= limit:
            return text
        return (text[:limit] + f" […cut: {len(text):,} characters; read_session with "
                               "format=markdown gives them whole]")

    def cut_block(b: dict[str, Any]) -> dict[str, Any]:
        out = {k: cut(v) if k in ("text", "data") else v for k, v in b.items()}
        if "arguments" in b and size(b["arguments"]) > limit:
            out["arguments"] = {"cut": cut(json.dumps(b["arguments"], ensure_ascii=False))}
        return out

    blocks = [cut_block(b) for b in item["blocks"]]
    out = {**item, "user": cut(item["user"]), "error": cut(item["error"]), "blocks": blocks}
    while out["blocks"] and size(out) > room:
        out["blocks"] = out["blocks"][:len(out["blocks"]) // 2]
    if len(out["blocks"]) < len(blocks):
        out["blocks_left_out"] = len(blocks) - len(out["blocks"])
    return out


def search(store: SessionStore, query: str, limit: int) -> list[dict[str, Any]]:
    """Sessions whose title, summary or messages hold every word of ``query`` (else, when none
    does, any of them), best first, through the sessions index (``Store.search``); each
    with its number in the listing and a snippet of its best matching text (the matched
    words between ``**``)."""
    if not query.strip():
        raise ToolError("the query is empty: give one or more words to look for")
    try:
        hits = store.search(query, limit)
    except StoreError as exc:
        raise ToolError(str(exc)) from None
    return [{"id": hit.session_id, "title": hit.title or None, "date": hit.date.isoformat(),
             "number": hit.number, "snippet": hit.snippet} for hit in hits]


def build_server(cfg: Config, model: SummaryModel) -> SessionsServer:
    """The server over ``cfg``'s sessions directory; ``model`` writes summaries."""
    store = SessionStore(cfg.session.dir)
    server = SessionsServer(store)
    _add_finding(server, store)
    _add_reading(server, store, model)
    return server


def _find(store: SessionStore, ref: str | int) -> SessionInfo:
    try:
        return store.resolve(str(ref))
    except StoreError as exc:
        raise ToolError(str(exc)) from None


def _add_finding(server: SessionsServer, store: SessionStore) -> None:
    """The tools that find sessions: list_sessions and search_sessions."""

    @server.tool()
    def list_sessions(limit: int = 50, offset: int = 0) -> dict[str, Any]:
        """List saved sessions, most recent first: id, title, date, agent, queries, whether it
        has a summary, and its parent session (the one it continues)."""
        _check_limit(limit, offset)
        try:
            page = store.page(offset + limit)  # the index: no file opened
        except StoreError as exc:
            raise ToolError(str(exc)) from None
        return {"total": page.total,
                "sessions": [session_entry(i) for i in page.sessions[offset:]],
                "problems": [{"file": name, "reason": why} for name, why in page.problems]}

    @server.tool()
    def search_sessions(query: str, limit: int = 10) -> dict[str, Any]:
        """Find sessions whose title, summary or messages contain every word of the query
        (else, when none does, any of them), best matches first; each hit with its id, title,
        date, number and a snippet (matched words between **)."""
        _check_limit(limit)
        return {"hits": search(store, query, limit)}


def _add_reading(server: SessionsServer, store: SessionStore, model: SummaryModel) -> None:
    """What reads one session: the read_session and compact_session tools, and the session
    resources."""

    @server.tool(structured_output=False)
    def read_session(session: str | int, format: Literal["markdown", "json"] = "markdown",
                     offset: int = 0, max_chars: int = PAGE_CHARS) -> str:
        """The transcript of a session (a number from list_sessions, an id or a unique part
        of one), a page at a time: its markdown file from character ``offset``, or JSON
        (header, turns with their blocks in order: texts, tool calls, results; summary)
        from turn number ``offset`` (0: the first).
        A page holds at most ``max_chars`` characters and says how to read on."""
        return read_page(store, session, format, offset, max_chars)

    @server.tool()
    def compact_session(session: str | int, focus: str | None = None, max_words: int | None = None,
                        refresh: bool = False) -> dict[str, Any]:
        """The structured summary of a session (background, topics, decisions, pending
        items, files) with its parent's context carried, as JSON. Answered from the session's
        own summary or a cache when possible ("cached": true); "focus" (at most 2,000
        characters) steers a new summary, "max_words" (20 to 10,000) bounds it, "refresh"
        writes it again. Changes no session file."""
        try:
            return compact(store, str(session), model, focus=focus, max_words=max_words,
                           refresh=refresh).as_json()
        except RollchatError as exc:
            raise ToolError(str(exc)) from None

    @server.resource(URI_TEMPLATE, name="session", mime_type="text/markdown",
                     description="A saved session's transcript (markdown).")
    def session_resource(session_id: str) -> str:
        try:
            return _markdown(store, session_id)
        except StoreError as exc:
            raise ResourceNotFoundError(str(exc)) from None


def read_page(store: SessionStore, session: str | int, format: str, offset: int,
              max_chars: int) -> str:
    """read_session's answer: a page of the session's markdown, or of its JSON."""
    if offset < 0:
        raise ToolError(f"offset must be 0 or more (got {offset})")
    if not 1_000 <= max_chars <= MAX_PAGE_CHARS:
        raise ToolError(f"max_chars must be between 1000 and {MAX_PAGE_CHARS} "
                        f"(got {max_chars})")
    info = _find(store, session)
    try:
        if format == "json":
            return json.dumps(transcript_page(store.load_transcript(info.session_id), offset,
                                              max_chars), indent=1, ensure_ascii=False)
        return markdown_page(_markdown(store, info.session_id), info.session_id, offset,
                             max_chars)
    except RollchatError as exc:
        raise ToolError(str(exc)) from None


def _markdown(store: SessionStore, session_id: str) -> str:
    from rollchat.storage.transcript import decode

    data = store.read_bytes(session_id)
    try:
        return decode(data, binary_check=False)
    except RollchatError as exc:
        raise StoreError(f"{session_id}.md: {exc}") from None


def serve(cfg: Config, model: SummaryModel) -> None:
    """Serve over stdio until the client closes the connection."""
    import anyio

    from rollchat.server.wire import serve_stdio

    anyio.run(serve_stdio, build_server(cfg, model))
