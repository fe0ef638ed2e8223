"""Sessions as every Store names and lists them: ids (``slug``, new ids), the listing
(SessionInfo, Listing, a Page of it, a search Hit) from a file's head and tail, THE numbering,
and ``resolve``."""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Sequence
from datetime import datetime
from operator import attrgetter
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from rollchat.errors import StoreError
from rollchat.storage.titles import first_line_title

if TYPE_CHECKING:  # (the transcript package is imported to read a file: a listing from the
    # index reads none, and `sessions`, `search`, `compact N --json` are timed: bench/)
    from rollchat.storage.transcript import Glance

# how the store opens a session file: its last component not followed (session_file too)
NOFOLLOW = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)

# A session id, as it names a file ``<id>.md``: nothing that could leave a directory.
SESSION_ID_RE = re.compile(r"[A-Za-z0-9_-]+")
_PREVIEW_CHARS = 60

# THE numbering, the one every place shows and ``resume N`` reads (sessions, search, the
# picker, in a chat and on the command line): every session of the directory, the current
# one of a chat included (marked, never left out: leaving it out renumbered the rest), most
# recently started first: by the header's Date, then the id (later first); a session with
# nothing in it (SessionInfo.empty) after every other. Written once, here, as (the index's
# column, the SessionInfo field it holds, descending): ``numbered`` sorts a list by it, the
# index (storage/index.py) by the SQL made from it (ORDER_SQL, ORDER_COLUMNS).
ORDER = (("empty", "empty", False), ("ts", "date", True), ("id", "session_id", True))
ORDER_COLUMNS = ", ".join(f"{column}{' DESC' * desc}" for column, _, desc in ORDER)
ORDER_SQL = f"ORDER BY {ORDER_COLUMNS}"


def slug(agent_key: str) -> str:
    """The agent key as it appears in session ids: lowercase letters, digits and ``_``."""
    return re.sub(r"[^a-z0-9]+", "_", agent_key.lower()).strip("_")[:40] or "session"


def new_ids(agent_key: str, now: datetime) -> list[str]:
    """``{slug}_{YYYYMMDD_HHMMSS}_{hex}`` ids for a new session, to try in turn until one is
    free (a longer random part after 20 are taken)."""
    import secrets  # (only a new session needs it: a listing is timed, bench/)

    base = f"{slug(agent_key)}_{now:%Y%m%d_%H%M%S}"
    return [f"{base}_{secrets.token_hex(2 if n < 20 else 4)}" for n in range(200)]


def check_id(session_id: str) -> str:
    """``session_id`` if it is one (it names a file: nothing that leaves a directory)."""
    if not SESSION_ID_RE.fullmatch(session_id) or len(session_id) > 200:
        raise StoreError(f"invalid session id: {session_id[:80]!r}")
    return session_id


class SessionInfo(NamedTuple):
    """One listed session, from its head and tail only. (The listing's records are named
    tuples, not dataclasses: ``compact N --json`` and ``sessions`` are timed, bench/, and
    ``dataclasses`` imports inspect, ast, dis and tokenize; ``_replace`` makes a changed
    copy, ``_asdict`` a dict.)"""

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
    # the header's Title, else the first query's first line trimmed ("" with no query yet)
    title: str = ""
    imported_from: str | None = None  # the header's Imported From (an imported transcript)

    @property
    def empty(self) -> bool:
        """Nothing in it to resume: a header only (killed right after the first Enter, or a
        handed-to session before its first entry). Listed after every other, never ``-c``."""
        return not self.has_summary and self.queries == 0 and self.first_query_preview is None


class Listing(NamedTuple):
    """Sessions numbered 1.. (most recent first) and the files that are not sessions."""

    sessions: list[SessionInfo]
    problems: list[tuple[str, str]]


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
                       handed_from=h.handed_from, cost=h.cost,
                       title=h.title or first_line_title(seen.first_query),
                       imported_from=h.imported_from)




def file_info(path: Path, st: os.stat_result) -> SessionInfo:
    """The (unnumbered) listing entry of the file ``path`` named ``<id>.md``, whose lstat is
    ``st``, from its head and tail; StoreError or TranscriptError saying why it is not a
    session."""
    from rollchat.storage.transcript import glance

    name = path.name
    if stat.S_ISLNK(st.st_mode):
        raise StoreError(f"symbolic link to {os.readlink(path)!r}, not followed")
    if not stat.S_ISREG(st.st_mode):
        raise StoreError("not a regular file")
    if not SESSION_ID_RE.fullmatch(name[:-3]):
        raise StoreError("file name is not a session id")
    try:
        fd = os.open(path, os.O_RDONLY | NOFOLLOW | getattr(os, "O_NONBLOCK", 0))
    except OSError as e:
        raise StoreError(f"cannot open: {e.strerror}") from None
    try:
        seen = glance(lambda at, n: os.pread(fd, n, at), os.fstat(fd).st_size)
    finally:
        os.close(fd)
    return session_info(name, path, seen)


def numbered(found: list[SessionInfo], problems: list[tuple[str, str]],
             exclude: str | None = None) -> Listing:
    """The listing: sessions numbered from 1 in THE order (see ``ORDER_SQL``); ``exclude``
    (an id) left out after numbering, so it moves no other session's number."""
    ordered = list(found)
    for _, name, desc in reversed(ORDER):  # (stable sorts: the first column decides first)
        ordered.sort(key=attrgetter(name), reverse=desc)
    return Listing([info._replace(number=n) for n, info in enumerate(ordered, 1)
                    if info.session_id != exclude], problems)


def not_current(info: SessionInfo, current: str | None) -> SessionInfo:
    """``info``, unless it is the chat's current session (``current``: its id): StoreError
    saying so (resuming the session one is in continues nothing)."""
    if current is not None and info.session_id == current:
        raise StoreError(f"session {info.number} ({info.session_id}) is the current session: "
                         "you are in it already (marked * current in 'sessions')")
    return info


def _matching(ref: str, ids: list[str]) -> list[str]:
    """The ids ``ref`` names, from the first rule that matches any: the id itself, then ids
    starting with it, ending with it (the random part users remember), containing it."""
    for rule in (str.__eq__, str.startswith, str.endswith, str.__contains__):
        found = [i for i in ids if rule(i, ref)]
        if found:
            return found
    return []


def choose(ref: str, total: int, ids: Sequence[str],
           problems: Sequence[tuple[str, str]] = ()) -> int | str:
    """What ``ref`` (what a user typed) names among ``total`` listed sessions whose ids are
    ``ids``: a listing number (1-based), or the id it names: the full id, else a unique
    prefix, else a unique suffix (``d57d``), else a unique substring. Digits are a number when
    in range, else they may name the whole random part of an id (``4821``). StoreError saying
    why otherwise (an ambiguous ref lists the ids it matches)."""
    ref = ref.strip()
    if ref.isascii() and ref.isdigit():
        if not total:
            raise StoreError("there are no saved sessions to choose from")
        n = int(ref)
        if 1 <= n <= total:
            return n
        if not any(i.endswith(f"_{ref}") for i in ids):
            raise StoreError(f"no session number {n}: choose between 1 and {total}")
        ref = f"_{ref}"  # only a whole random part: "3" must not match "..._143022_..."
    ref = ref.removesuffix(".md")
    if "/" in ref or "\\" in ref or ".." in ref or not SESSION_ID_RE.fullmatch(ref):
        raise StoreError(f"invalid session id: {ref[:80]!r}")
    matches = _matching(ref, list(ids))
    if len(matches) == 1:
        return matches[0]
    if matches:
        more = f" and {len(matches) - 10} more" if len(matches) > 10 else ""
        raise StoreError(f"ambiguous session id {ref!r}: it matches "
                         f"{', '.join(matches[:10])}{more}")
    bad = _matching(ref, [name.removesuffix(".md") for name, _ in problems])
    if bad:
        why = next(w for name, w in problems if name.removesuffix(".md") == bad[0])
        raise StoreError(f"session {ref!r} cannot be used: {why}")
    raise StoreError(f"no session {ref!r} (see 'sessions' for the list)")


def resolve(ref: str, listing: Listing, current: str | None = None) -> SessionInfo:
    """The session ``ref`` names in ``listing`` (whole: numbered 1.., see ``choose``); not
    the chat's ``current`` session (see ``not_current``)."""
    sessions = listing.sessions
    found = choose(ref, len(sessions), [s.session_id for s in sessions], listing.problems)
    if isinstance(found, int):
        return not_current(sessions[found - 1], current)
    return not_current(next(s for s in sessions if s.session_id == found), current)


def lineage(sessions: Sequence[SessionInfo], listed: Sequence[SessionInfo]) -> list[SessionInfo]:
    """``sessions`` and every session they continue (Resumed From, and theirs...) among
    ``listed``, as far as it goes."""
    by_id = {s.session_id: s for s in listed}
    found = {s.session_id: s for s in sessions}
    wanted = [s.resumed_from for s in sessions if s.resumed_from]
    while wanted:
        sid = wanted.pop()
        if sid in found or sid not in by_id:
            continue
        found[sid] = parent = by_id[sid]
        if parent.resumed_from:
            wanted.append(parent.resumed_from)
    return list(found.values())


# ---------------------------------------------------------------- a page, a search hit

DEFAULT_LIMIT = 20  # the sessions a listing shows, the hits a search shows, unless told


class Hit(NamedTuple):
    """One search result: a session, where it is in the listing, and the best matching text
    (matched words between ``**``)."""

    session_id: str
    title: str
    date: datetime
    snippet: str
    number: int  # its number in the full listing (``resume N``)
    file_name: str
    # the snippet as (text, matched) parts, to draw the matched words in bold (a ``**`` in the
    # session's own text is not a mark there)
    parts: tuple[tuple[str, bool], ...] = ()

    @property
    def text(self) -> str:
        """The snippet as plain text (no marks: piped and JSON output)."""
        return "".join(text for text, _ in self.parts)

    @property
    def matched(self) -> list[str]:
        """The words of the snippet that matched, in order, each once."""
        return list(dict.fromkeys(text for text, matched in self.parts if matched))


class Page(NamedTuple):
    """The most recent sessions (numbered 1..), how many there are in all, and the files that
    are not sessions."""

    sessions: list[SessionInfo]
    total: int
    problems: list[tuple[str, str]]

    @property
    def more(self) -> int:
        """How many sessions the page leaves out."""
        return self.total - len(self.sessions)
