"""Sessions as every Store names and lists them: ids (``slug``, new ids), the listing
(SessionInfo, Listing) from a file's head and tail, and ``resolve`` (what a user typed)."""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path

from rollchat.errors import StoreError
from rollchat.transcript import Glance

# A session id, as it names a file ``<id>.md``: nothing that could leave a directory.
SESSION_ID_RE = re.compile(r"[A-Za-z0-9_-]+")
_PREVIEW_CHARS = 60


def slug(agent_key: str) -> str:
    """The agent key as it appears in session ids: lowercase letters, digits and ``_``."""
    return re.sub(r"[^a-z0-9]+", "_", agent_key.lower()).strip("_")[:40] or "session"


def new_ids(agent_key: str, now: datetime) -> list[str]:
    """``{slug}_{YYYYMMDD_HHMMSS}_{hex}`` ids for a new session, to try in turn until one is
    free (a longer random part after 20 are taken)."""
    base = f"{slug(agent_key)}_{now:%Y%m%d_%H%M%S}"
    return [f"{base}_{secrets.token_hex(2 if n < 20 else 4)}" for n in range(200)]


def check_id(session_id: str) -> str:
    """``session_id`` if it is one (it names a file: nothing that leaves a directory)."""
    if not SESSION_ID_RE.fullmatch(session_id) or len(session_id) > 200:
        raise StoreError(f"invalid session id: {session_id[:80]!r}")
    return session_id


@dataclass(frozen=True)
class SessionInfo:
    """One listed session, from its head and tail only."""

    number: int
    session_id: str
    file_name: str
    path: Path | None  # the file; None in a store that keeps nothing on disk
    agent: str
    agent_path: str
    model: str
    provider: str
    date: datetime
    queries: int
    tokens: int
    first_query_preview: str | None
    has_summary: bool
    resumed_from: str | None
    previous_session: str | None
    summary_problem: str | None = None
    # False when ``tokens`` is a lower bound: a session without a summary whose file is
    # longer than the tail window (its tokens are added up from the turn footers read).
    tokens_exact: bool = True
    forked: bool = False  # its parent was open in another process when it was made
    continued_in: tuple[str, ...] = ()  # the sessions that continue it
    context_tokens: int = 0  # the context's size at its last call (tokens: billed in all)
    tools: tuple[str, ...] | None = None  # the agent's own tools, when recorded
    handed_from: str | None = None  # the session that handed the conversation to it (@NAME)
    cost: float | None = None  # dollars, as its header records them (None: price unknown)


@dataclass(frozen=True)
class Listing:
    """Sessions numbered 1.. (most recent first) and the files that are not sessions."""

    sessions: list[SessionInfo] = field(default_factory=list)
    problems: list[tuple[str, str]] = field(default_factory=list)


def session_info(file_name: str, path: Path | None, seen: Glance) -> SessionInfo:
    """The (unnumbered) listing entry of the file ``file_name`` from what its head and tail
    tell; StoreError if its Session ID is not its name."""
    h = seen.header
    if h.session_id != file_name.removesuffix(".md"):
        raise StoreError(f"its Session ID {h.session_id[:60]!r} does not match the file name")
    preview = seen.first_query
    if preview is not None and len(preview) > _PREVIEW_CHARS:
        preview = preview[:_PREVIEW_CHARS - 1] + "…"
    queries = h.total_queries if seen.has_summary else max(h.total_queries, seen.last_query)
    # The header's totals are refreshed after every saved turn: they are exact when they count
    # the last query (a crash between a turn's append and the refresh leaves them one behind);
    # else count the footers: exact from the whole file, else a lower bound.
    if seen.has_summary or (h.total_queries and h.total_queries >= seen.last_query):
        tokens, exact = h.total_tokens, True
    elif seen.whole:
        tokens, exact = seen.query_tokens, True
    else:
        tokens, exact = max(h.total_tokens, seen.query_tokens), False
    return SessionInfo(0, h.session_id, file_name, path, h.agent, h.agent_path, h.model,
                       h.provider, h.date, queries, tokens, preview, seen.has_summary,
                       h.resumed_from, h.previous_session, seen.summary_problem, exact,
                       h.forked, h.continued_in, h.context_tokens, tools=h.tools,
                       handed_from=h.handed_from, cost=h.cost)


def numbered(found: list[SessionInfo], problems: list[tuple[str, str]]) -> Listing:
    """The listing: sessions most recent first, numbered from 1."""
    ordered = sorted(found, key=lambda i: (i.date, i.session_id), reverse=True)
    return Listing([replace(info, number=n) for n, info in enumerate(ordered, 1)], problems)


def _matching(ref: str, ids: list[str]) -> list[str]:
    """The ids ``ref`` names, from the first rule that matches any: the id itself, then ids
    starting with it, ending with it (the random part users remember), containing it."""
    for rule in (str.__eq__, str.startswith, str.endswith, str.__contains__):
        found = [i for i in ids if rule(i, ref)]
        if found:
            return found
    return []


def resolve(ref: str, listing: Listing) -> SessionInfo:
    """A listing number (1-based), or a session id: the full id, else a unique prefix, else a
    unique suffix (``d57d``), else a unique substring -> the session. Digits are a number when
    in range, else they may name the whole random part of an id (``4821``)."""
    ref = ref.strip()
    sessions = listing.sessions
    if ref.isascii() and ref.isdigit():
        if not sessions:
            raise StoreError("there are no saved sessions to choose from")
        n = int(ref)
        if 1 <= n <= len(sessions):
            return sessions[n - 1]
        if not any(s.session_id.endswith(f"_{ref}") for s in sessions):
            raise StoreError(f"no session number {n}: choose between 1 and {len(sessions)}")
        ref = f"_{ref}"  # only a whole random part: "3" must not match "..._143022_..."
    ref = ref.removesuffix(".md")
    if "/" in ref or "\\" in ref or ".." in ref or not SESSION_ID_RE.fullmatch(ref):
        raise StoreError(f"invalid session id: {ref[:80]!r}")
    matches = _matching(ref, [s.session_id for s in sessions])
    if len(matches) == 1:
        return next(s for s in sessions if s.session_id == matches[0])
    if matches:
        more = f" and {len(matches) - 10} more" if len(matches) > 10 else ""
        raise StoreError(f"ambiguous session id {ref!r}: it matches "
                         f"{', '.join(matches[:10])}{more}")
    bad = _matching(ref, [name.removesuffix(".md") for name, _ in listing.problems])
    if bad:
        why = next(w for name, w in listing.problems if name.removesuffix(".md") == bad[0])
        raise StoreError(f"session {ref!r} cannot be used: {why}")
    raise StoreError(f"no session {ref!r} (see 'sessions' for the list)")

