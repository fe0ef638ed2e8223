"""What the session core needs from wherever sessions are kept: the Store and LiveSession
protocols. SessionStore (storage.store) keeps them as files, InMemoryStore (storage.in_memory)
in memory, for --no-save and tests."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

from rollchat.domain import Summary, Transcript, Turn
from rollchat.storage.listing import DEFAULT_LIMIT, Hit, Listing, Page, SessionInfo


class LiveSession(Protocol):
    """A session being written: each completed turn is appended, durably. Its writer holds it
    (no other process writes it) until ``close``."""

    @property
    def session_id(self) -> str: ...

    @property
    def file_name(self) -> str: ...  # "<session_id>.md": what a child's header links to

    def append_turn(self, turn: Turn, agent_name: str) -> None: ...  # never rewrites
    # the turn in progress (its tool calls so far), replaced by the next write_pending or
    # by append_turn: a crash in a tool loop keeps every completed call
    def write_pending(self, turn: Turn, agent_name: str) -> None: ...

    def set_totals(self, queries: int, billed: int, context: int,
                   cost: float | None = None) -> None: ...  # in place

    def set_title(self, title: str) -> None: ...  # the header's Title (between turns)

    def close(self) -> None: ...  # let go of it (safe to call twice); writes nothing


class Store(Protocol):
    """Where sessions are kept. Failures are StoreError; the load methods raise TranscriptError
    for a session whose text cannot be parsed. Writes to a session another process has open
    raise SessionBusyError."""

    @property
    def location(self) -> str: ...  # the banner's: the directory, or "memory only (--no-save)"

    def ensure(self) -> None: ...  # make it usable (create the directory); StoreError if not

    def new_session(self, *, agent_key: str, agent: str, agent_path: str, model: str,
                    provider: str, now: datetime, resumed_from: str | None,
                    previous_session: str | None, forked: bool = False,
                    tools: tuple[str, ...] | None = None, handed_from: str | None = None,
                    imported_from: str | None = None,
                    cost: float | None = None,  # None: no price, no Cost line in the header
                    title: str | None = None,
                    entries: Sequence[Turn] = (),  # its first entries, with the header
                    pending: Turn | None = None,  # then the turn in progress (write_pending)
                    ) -> LiveSession: ...  # holding its header, held by this process

    def finalize(self, session_id: str, summary: Summary, *, total_queries: int,
                 total_tokens: int, context_tokens: int | None = None,
                 cost: float | None = None,
                 ) -> None: ...  # header totals + summary block, atomically

    def link_child(self, session_id: str, child_id: str) -> None: ...  # "Continued In", atomically

    def replace_summary(self, session_id: str, summary: Summary,
                        ) -> None: ...  # the summary block only, atomically (summary edit)

    def snapshot(self, session_id: str) -> bytes: ...  # the file's exact bytes

    # put a snapshot back, atomically, and hold the session again (undo of a compaction)
    def reopen(self, session_id: str, data: bytes) -> LiveSession: ...

    def delete(self, session_id: str) -> None: ...  # remove it (prune); busy: SessionBusyError

    def set_title(self, session_id: str, title: str) -> None: ...  # the header's Title

    def open_elsewhere(self, session_id: str) -> bool: ...  # does another process write it

    def list_sessions(self, exclude: str | None = None) -> Listing: ...  # newest first, 1..

    # the ``limit`` most recent sessions (None: all) in THE numbering, the total, the files
    # that are not sessions; ``exclude`` (an id) left out after numbering
    def page(self, limit: int | None = DEFAULT_LIMIT, exclude: str | None = None) -> Page: ...

    # the sessions whose title, summary or turns hold the words of ``text``, best first;
    # None when nothing is kept to search (--no-save); StoreError for text with no word
    def search(self, text: str, limit: int = DEFAULT_LIMIT) -> list[Hit] | None: ...

    # the session ``ref`` names (a number in THE numbering, an id, a unique part of one; see
    # listing.choose), never the chat's ``current`` one; StoreError saying why not
    def resolve(self, ref: str, current: str | None = None) -> SessionInfo: ...

    # ``sessions`` and every session they continue (Resumed From, as far as it goes)
    def lineage(self, sessions: Sequence[SessionInfo]) -> list[SessionInfo]: ...

    def load_summary(self, info: SessionInfo) -> Summary | None: ...  # None: none or corrupted

    def load_transcript(self, session_id: str) -> Transcript: ...  # a bad summary is dropped

    def has_file(self, file_name: str) -> bool: ...  # is the session a header links to there
