"""The state of one live session (its turns, file and totals), the parent a child continues
from, and the small pure rules about turns both the session and its tests use."""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone

from rollchat.compaction.policy import PolicyState
from rollchat.compaction.summarizer import Background
from rollchat.domain import QUERY_KINDS, Summary, Turn, Usage
from rollchat.engine.context import WorkingContext
from rollchat.errors import UsageError
from rollchat.models.calls import Call, usage_of
from rollchat.models.prices import ChainCost
from rollchat.providers.base import (
    AuthError,
    ContextTooLongError,
    ModelNotFoundError,
    ProviderError,
)
from rollchat.storage.store import LiveSession
from rollchat.text.wording import session_size
from rollchat.tools import Tool

CARRIED_PREFIX = "Carried over verbatim from "
UNSAVED = "(unsaved)"

def now() -> datetime:
    return datetime.now(timezone.utc).astimezone()


def chain_key(first_session: str | None = None) -> str:
    """The key of a conversation chain's requests (sent as OpenAI's ``prompt_cache_key``):
    a hash of the chain's first session id (a resumed chain: every process that continues
    it sends the same key), or of a random token for a new chat (its id comes with its file,
    after the first answer; the key must not change between its first and second request).
    A compaction's child and its summary request keep the chain's key. Never the id itself:
    nothing of the user's leaves in it."""
    seed = first_session or secrets.token_hex(16)
    return "rollchat-" + hashlib.sha256(f"rollchat chain {seed}".encode()).hexdigest()[:32]


@dataclass
class SessionState:
    """The live session: its turns so far and, once the first query is saved, its file."""

    started: datetime
    resumed_from: str | None = None
    previous_session: str | None = None
    parent_summary: Summary | None = None
    forked: bool = False  # the parent was open in another process: it is not written
    handed_from: str | None = None  # the session that handed the conversation here (@NAME)
    turns: list[Turn] = field(default_factory=list)
    restored: Turn | None = None
    live: LiveSession | None = None
    save_failed: bool = False  # the last write failed: saving resumes at the next one
    saved_entries: int = 0  # how many of the restored acknowledgment and turns are on disk
    summary_failed: bool = False  # the turns are saved, the summary block could not be
    # summaries made in the background from ~70% of the budget on (see compaction.summarizer)
    background: Background = field(default_factory=Background)
    query_turns: int = 0  # turns with a query: asked here, or carried over from the parent
    queries: int = 0  # queries asked in this session (carried-over turns excluded)
    # every model call billed to this session, one record each (its queries, its restoration,
    # its summaries: compact, exit, automatic compaction, background pre-summaries): every
    # cost and token figure of the session is summed from these
    calls: list[Call] = field(default_factory=list)
    chain: ChainCost = field(default_factory=ChainCost)  # the sessions this one continues
    title: str | None = None  # set by the user (``title``): the header's Title from then on
    cache_key: str = field(default_factory=chain_key)  # its chain's (see ``chain_key``)

    def add(self, turn: Turn, calls: Sequence[Call] = ()) -> None:
        """Record a turn; a query's model calls are recorded with it (``calls``: one per
        call it made, with who answered and at what price)."""
        self.turns.append(turn)
        if turn.kind in QUERY_KINDS:
            self.query_turns += 1
        if turn.kind == "query":
            self.queries += 1
            self.calls += calls

    def charge(self, call: Call) -> None:
        """A model call made for this session besides its queries (see ``calls``)."""
        self.calls.append(call)

    def set_title(self, text: str) -> str:
        """The title ``text`` (one line, trimmed: see titles.py), in the header now or, before
        the file exists, when it is made. UsageError when the text is empty; StoreError when
        the file cannot be rewritten."""
        from rollchat.storage.titles import user_title

        try:
            title = user_title(text)
        except ValueError as exc:
            raise UsageError(f"{exc}: title NEW TITLE") from None
        if self.live is not None:
            self.live.set_title(title)
        self.title = title
        return title

    def close(self) -> None:
        """Let go of the session file (saved): other processes may resume or link it now."""
        if self.live is not None:
            self.live.close()

    @property
    def usage(self) -> Usage:
        """The usage of this session's queries, summed."""
        return usage_of(self.calls, "turn")

    @property
    def tokens(self) -> int:
        """Tokens of this session's queries."""
        return self.usage.total

    @property
    def summary_usage(self) -> Usage:
        return usage_of(self.calls, "summary")

    @property
    def restoration_tokens(self) -> int:
        return usage_of(self.calls, "restoration").total

    @property
    def memory_tokens(self) -> int:
        """Tokens of the memory's fact-extraction calls billed to this session."""
        return usage_of(self.calls, "memory").total

    @property
    def summary_tokens(self) -> int:
        return self.summary_usage.total

    @property
    def billed(self) -> int:
        """Tokens billed in this session: every call of ``calls``."""
        return self.billed_usage.total

    @property
    def billed_usage(self) -> Usage:
        """The usage of every model call billed to this session (see ``calls``)."""
        return usage_of(self.calls)

    @property
    def session_id(self) -> str | None:
        return self.live.session_id if self.live else None

    def as_parent(self, summary: Summary) -> Parent:
        """This session, summarized, as the parent of the child that continues it."""
        return Parent(self.session_id, self.live.file_name if self.live else None, summary,
                      self.started, self.queries, self.billed, self.resumed_from,
                      title=self.title)


def session_title(state: SessionState) -> str | None:
    """The title a session has so far: the user's, else its first query's first line."""
    from rollchat.storage.titles import first_line_title

    if state.title:
        return state.title
    first = next((t.user for t in state.turns if t.kind == "query"), None)
    return first_line_title(first) or None


def saved_title(state: SessionState, summary: Summary) -> str | None:
    """The title a session's file has once ``summary`` is saved (see ``render_finalized``):
    the one it was given, else the summary's, else its first query's first line."""
    from rollchat.storage.titles import model_title

    return (state.title or (model_title(summary.title) if summary.title else None)
            or session_title(state))


@dataclass
class UndoPoint:
    """What a ``compact`` replaced, to put it back while its child has had no turn."""

    data: bytes | None  # the parent's file before the compaction (None: it had none)
    state: SessionState
    context: WorkingContext
    tools: dict[str, Tool]
    guards: PolicyState
    child: SessionState | None = None  # the session the compaction started


@dataclass(frozen=True)
class Parent:
    """The session a child continues from: what its restoration prompt says about it."""

    session_id: str | None
    file_name: str | None
    summary: Summary
    date: datetime
    queries: int
    tokens: int
    grandparent: str | None
    forked: bool = False  # open in another process: the child is a fork, the file not written
    by_user: bool = False  # forked by the user's ``fork`` (not because it was open elsewhere)
    cache_key: str | None = None  # the chain's key, when the child continues a saved chain
    title: str | None = None  # the title the user gave it: the child keeps it (one name)


def restoration_prompt(parent: Parent, *, archive_tool: bool) -> str:
    """The prompt that hands ``parent``'s summary to the agent (see restore.py)."""
    from rollchat.compaction.restore import build_restoration_prompt

    return build_restoration_prompt(
        session_id=parent.session_id or UNSAVED, date=parent.date, queries=parent.queries,
        tokens=parent.tokens, parent_of_parent=parent.grandparent,
        file_name=parent.file_name or UNSAVED, summary=parent.summary,
        archive_tool=archive_tool)


def restored_context(parent: Parent, *, automatic: bool) -> str:
    """The ``Context:`` line of a child's first entry: where it was restored from."""
    how = ("Compacted automatically from" if automatic else "Forked from" if parent.forked
           else "Resumed from")
    note = "open in another process; " if parent.forked and not parent.by_user else ""
    size = session_size(parent.queries, parent.tokens)  # the words `sessions` uses too
    return f"{how} {parent.session_id or UNSAVED} ({note}{size})"


def carried_turns(turns: Sequence[Turn], count: int, parent_id: str) -> list[Turn]:
    """The last ``count`` answered queries, to be recorded again in the child session (with
    zero tokens: they were paid for, and are counted, in the parent). A turn with no answer
    is never carried: the model never saw it."""
    answered = [t for t in turns if t.kind in QUERY_KINDS and t.status != "unanswered"]
    kept = answered[-count:] if count > 0 else []
    return [replace(t, kind="carried", number=i + 1, usage=Usage(),
                    context=f"{CARRIED_PREFIX}{parent_id}")
            for i, t in enumerate(kept)]


TOOLS_TOO_BIG = "request too large because of the tools"


def tools_too_big(error: str, tools: int, without: str | None) -> str:
    """The refusal of a message too large for the window, saying so when the tools' specs
    (``tools`` tokens) are why: without them (``without`` is None) it would fit."""
    if without is not None:
        return error
    return (f"{TOOLS_TOO_BIG} (their specs take about {tools:,} tokens): "
            f"{error.removeprefix('message too long: ')}")


def unusable(error: ProviderError | None, model: str) -> str | None:
    """Why asking the same model again (the exit's summary) would only fail the same way: its
    key refused, the model unknown to its server; None when it may answer."""
    if isinstance(error, AuthError):
        return "its API key was refused"
    if isinstance(error, ModelNotFoundError):
        return f"the server has no model {model!r}"
    return None


def failure_hint(error: ProviderError | None, too_big_message: bool,
                 auto_off: bool = False, tools: str = "", key_var: str | None = None,
                 model: str = "") -> str:
    """What to do about an answer that failed, by the kind of failure (``auto_off``:
    automatic compaction is off, so a conversation too long for the window stays so;
    ``tools``: the refusal, which may say the tools' specs are why; ``key_var``: the variable
    the provider in use reads its key from; ``model``: the model asked)."""
    if TOOLS_TOO_BIG in tools:
        return ("Offer fewer tools (an MCP server's include_tools or exclude_tools, or the "
                "agent's own) or use a model with a larger window; your message was kept.")
    if auto_off and isinstance(error, ContextTooLongError):  # the conversation, not the message
        return ("The conversation no longer fits the model's window and automatic compaction "
                "is off: type 'compact' (or 'auto on'), then press Up and Enter to send your "
                "message again (it is kept in the transcript and the history).")
    if too_big_message or isinstance(error, ContextTooLongError):
        return "Shorten or split the message (it is kept in the transcript and the history)."
    if isinstance(error, AuthError):
        where = f"the API key in {key_var}" if key_var else "the API key"
        return f"Check {where}. Your message was kept."
    if isinstance(error, ModelNotFoundError):
        return (f"The server has no model {model!r}: 'model' lists the choices, 'model NAME' "
                "switches (or start with --model NAME); your message was kept, press Up and "
                "Enter to send it again.")
    if isinstance(error, ProviderError) and not error.retryable:
        return "Your message was kept in the transcript and the input history."
    return "Your message was kept; press Up and Enter to send it again."
