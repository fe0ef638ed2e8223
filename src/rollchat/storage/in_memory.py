"""InMemoryStore: a Store that keeps nothing on disk (``--no-save``, tests). Each session is the
exact text its file would hold, listed, loaded and finalized by the same transcript code."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from datetime import datetime

from rollchat.config.settings import NO_SAVE_LOCATION
from rollchat.domain import SessionHeader, Summary, Transcript, Turn
from rollchat.errors import StoreError, TranscriptError
from rollchat.storage.listing import (
    DEFAULT_LIMIT,
    Listing,
    Page,
    SessionInfo,
    check_id,
    lineage,
    new_ids,
    numbered,
    resolve,
    session_info,
)
from rollchat.storage.transcript import (
    ReadAt,
    decode,
    glance,
    parse_head,
    parse_lenient,
    render_finalized,
    render_header,
    render_linked,
    render_resummarized,
    render_titled,
    render_totals,
    render_turn,
    tail_summary,
    totals_span,
)
from rollchat.text.normalize import encode


def _reader(data: bytes) -> ReadAt:
    return lambda offset, size: data[offset:offset + size]


class InMemorySession:
    """A session being written into an InMemoryStore."""

    def __init__(self, store: InMemoryStore, header: SessionHeader,
                 pending_at: int | None = None) -> None:
        self._store = store
        self.header = header
        self.session_id = header.session_id
        self.file_name = f"{header.session_id}.md"
        self._pending_at = pending_at

    def append_turn(self, turn: Turn, agent_name: str) -> None:
        """Append one turn block to the session's text (replacing the provisional one)."""
        self._store.append(self.session_id, encode(render_turn(turn, agent_name)),
                           at=self._pending_at)
        self._pending_at = None

    def write_pending(self, turn: Turn, agent_name: str) -> None:
        """The turn in progress, replaced by the next write (see FileSession)."""
        if self._pending_at is None:
            self._pending_at = len(self._store._bytes(self.session_id))
        self._store.append(self.session_id, encode(render_turn(turn, agent_name)),
                           at=self._pending_at)

    def set_totals(self, queries: int, billed: int, context: int,
                   cost: float | None = None) -> None:
        """Refresh the header's totals, as a file session does."""
        self._store.set_totals(self.session_id, queries, billed, context, cost)

    def set_title(self, title: str) -> None:
        """Set the header's Title, as a file session does."""
        self._store.set_title(self.session_id, title)

    def close(self) -> None:
        """Nothing to let go of: no other process sees this store."""


class InMemoryStore:
    """Sessions as in-memory texts keyed by id (``<id>.md`` is each one's file name)."""

    location = NO_SAVE_LOCATION

    def __init__(self) -> None:
        self._texts: dict[str, bytearray] = {}
        self._lock = threading.Lock()

    def ensure(self) -> None:
        """Nothing to create."""

    def has_file(self, file_name: str) -> bool:
        """Whether the session named by the link ``file_name`` (``<id>.md``) is here."""
        return file_name.endswith(".md") and file_name[:-3] in self._texts

    def new_session(self, *, agent_key: str, agent: str, agent_path: str, model: str,
                    provider: str, now: datetime, resumed_from: str | None = None,
                    previous_session: str | None = None, forked: bool = False,
                    tools: tuple[str, ...] | None = None, handed_from: str | None = None,
                    imported_from: str | None = None,
                    cost: float | None = None,
                    title: str | None = None, entries: Sequence[Turn] = (),
                    pending: Turn | None = None) -> InMemorySession:
        """A new session (an id as SessionStore makes them) holding its header and
        ``entries``, then ``pending`` (the turn in progress: the next turn replaces it)."""
        with self._lock:
            for sid in new_ids(agent_key, now):
                if sid not in self._texts:
                    header = SessionHeader(sid, now, agent, agent_path, model, provider,
                                           resumed_from, previous_session, forked=forked,
                                           tools=tools, handed_from=handed_from,
                                           imported_from=imported_from, cost=cost,
                                           title=title)
                    first = encode(render_header(header) + "".join(
                        render_turn(turn, agent) for turn in entries))
                    later = b"" if pending is None else encode(render_turn(pending, agent))
                    self._texts[sid] = bytearray(first + later)
                    return InMemorySession(self, header,
                                           None if pending is None else len(first))
        raise StoreError("could not find a free session id in memory")

    def _data(self, session_id: str) -> bytearray:
        """The session's bytes (call with the lock held)."""
        data = self._texts.get(check_id(session_id))
        if data is None:
            raise StoreError(f"no session {session_id} in memory")
        return data

    def _bytes(self, session_id: str) -> bytes:
        with self._lock:
            return bytes(self._data(session_id))

    def append(self, session_id: str, block: bytes, at: int | None = None) -> None:
        """Add ``block`` (a rendered turn) at the end of the session's text, or in place of
        everything from offset ``at`` (a provisional block)."""
        with self._lock:
            data = self._data(session_id)
            if at is not None:
                del data[at:]
            data.extend(block)

    def set_totals(self, session_id: str, queries: int, billed: int, context: int,
                   cost: float | None = None) -> None:
        """Refresh a session's header totals in place (see InMemorySession.set_totals)."""
        with self._lock:
            data = self._data(session_id)
            head = decode(bytes(data[:data.find(b"\n---\n") + 1]), binary_check=False)
            span = totals_span(head)
            new = encode(render_totals(queries, billed, context, cost))
            if span is not None:
                start = len(encode(head[:span[0]]))
                end = start + len(encode(head[span[0]:span[1]]))
                if end - start == len(new):
                    data[start:end] = new

    def _text(self, session_id: str) -> str:
        try:
            return decode(self._bytes(session_id), binary_check=False)
        except TranscriptError as e:
            raise StoreError(f"{session_id}.md: {e}") from None

    def finalize(self, session_id: str, summary: Summary, *, total_queries: int,
                 total_tokens: int, context_tokens: int | None = None,
                 cost: float | None = None) -> None:
        """Header totals updated, summary block at the end, as SessionStore.finalize does.
        (The text was rendered here, so it always has its header.)"""
        new = render_finalized(self._text(session_id), summary, total_queries=total_queries,
                               total_tokens=total_tokens, context_tokens=context_tokens,
                               cost=cost)
        with self._lock:
            self._texts[session_id] = bytearray(encode(new))

    def set_title(self, session_id: str, title: str) -> None:
        """Set the session's header Title."""
        new = render_titled(self._text(session_id), title)
        with self._lock:
            self._texts[session_id] = bytearray(encode(new))

    def link_child(self, session_id: str, child_id: str) -> None:
        """Add ``child_id`` to the session's ``Continued In`` header line."""
        new = render_linked(self._text(session_id), check_id(child_id))
        with self._lock:
            self._texts[session_id] = bytearray(encode(new))

    def replace_summary(self, session_id: str, summary: Summary) -> None:
        """Replace the session's summary block (the rest stays byte for byte)."""
        try:
            new = render_resummarized(self._text(session_id), summary)
        except TranscriptError as e:
            raise StoreError(f"{session_id}.md {e}") from None
        with self._lock:
            self._texts[session_id] = bytearray(encode(new))

    def snapshot(self, session_id: str) -> bytes:
        """The session's exact bytes (to put back with ``reopen``)."""
        return self._bytes(session_id)

    def reopen(self, session_id: str, data: bytes) -> InMemorySession:
        """Put ``data`` back as the session's text and write on (undoing a compaction)."""
        header = parse_head(decode(data, binary_check=False)).header
        with self._lock:
            self._texts[check_id(session_id)] = bytearray(data)
        return InMemorySession(self, header)

    def delete(self, session_id: str) -> None:
        """Forget the session."""
        with self._lock:
            self._texts.pop(check_id(session_id), None)

    def open_elsewhere(self, session_id: str) -> bool:
        """Never: no other process sees this store."""
        return False

    def list_sessions(self, exclude: str | None = None) -> Listing:
        """Sessions most recent first (numbered 1..), each read by head and tail as a file is;
        ``exclude`` left out after numbering."""
        with self._lock:
            texts = {sid: bytes(data) for sid, data in self._texts.items()}
        found: list[SessionInfo] = []
        problems: list[tuple[str, str]] = []
        for sid, data in sorted(texts.items()):
            try:
                found.append(session_info(f"{sid}.md", None, glance(_reader(data), len(data))))
            except (StoreError, TranscriptError) as e:
                problems.append((f"{sid}.md", str(e)))
        return numbered(found, problems, exclude)

    def page(self, limit: int | None = DEFAULT_LIMIT, exclude: str | None = None) -> Page:
        """The ``limit`` most recent sessions (None: all) of the listing, and its total."""
        listing = self.list_sessions(exclude)
        return Page(listing.sessions[:limit], len(listing.sessions), listing.problems)

    def search(self, text: str, limit: int = DEFAULT_LIMIT) -> None:
        """None: nothing is kept to search (--no-save)."""
        return None

    def resolve(self, ref: str, current: str | None = None) -> SessionInfo:
        """The session ``ref`` names in the whole listing (see listing.resolve)."""
        return resolve(ref, self.list_sessions(), current)

    def lineage(self, sessions: Sequence[SessionInfo]) -> list[SessionInfo]:
        """``sessions`` and the sessions they continue, from the listing."""
        return lineage(sessions, self.list_sessions().sessions)

    def load_summary(self, info: SessionInfo) -> Summary | None:
        """The session's summary from its tail, or None (none, or corrupted markers)."""
        data = self._bytes(info.session_id)
        try:
            return tail_summary(_reader(data), len(data))
        except TranscriptError as e:
            raise StoreError(f"{info.file_name}: {e}") from None

    def load_transcript(self, session_id: str) -> Transcript:
        """The whole session, parsed; a corrupted summary block is dropped (the turns remain)."""
        try:
            return parse_lenient(self._text(session_id))
        except TranscriptError as e:
            raise TranscriptError(f"{session_id}.md: {e}") from None
