"""The chat application: one live session, its turns, and the compact / resume / exit flows.

Ties the engine (model calls), the store (files) and the renderer (screen) together; the REPL
and piped input both drive it one line at a time.
"""

from __future__ import annotations

import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from typing import Any

from rollchat.compaction import SummaryOutcome, extractive_summary, summarize
from rollchat.config import AgentConfig, Config
from rollchat.domain import Summary, Turn
from rollchat.engine import Engine, EngineEvent, Retrying, ToolFinished, ToolStarted, describe_call
from rollchat.errors import RollchatError, StoreError
from rollchat.providers.base import Provider, TextDelta
from rollchat.render import Renderer, human_tokens
from rollchat.restore import build_restoration_prompt
from rollchat.store import LiveSession, SessionInfo, SessionStore, resolve


def _now() -> datetime:
    return datetime.now(timezone.utc).astimezone()


@dataclass
class SessionState:
    """The live session: its turns so far and, once the first query is saved, its file."""

    started: datetime
    resumed_from: str | None = None
    previous_session: str | None = None
    parent_summary: Summary | None = None
    turns: list[Turn] = field(default_factory=list)
    restored: Turn | None = None
    live: LiveSession | None = None
    save_failed: bool = False

    @property
    def queries(self) -> int:
        return sum(1 for t in self.turns if t.kind == "query")

    @property
    def tokens(self) -> int:
        return sum(t.usage.total for t in self.turns if t.kind == "query")

    @property
    def restoration_tokens(self) -> int:
        return self.restored.usage.total if self.restored else 0

    @property
    def session_id(self) -> str | None:
        return self.live.session_id if self.live else None


@contextmanager
def sigint_deferred() -> Iterator[None]:
    """Hold Ctrl-C while a file is being rewritten; deliver it afterwards."""
    pending: list[Any] = []

    def hold(signum: int, frame: Any) -> None:
        pending.append(signum)

    try:
        previous = signal.signal(signal.SIGINT, hold)
    except ValueError:  # not the main thread
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if pending:
        raise KeyboardInterrupt


class ChatApp:
    """One chat: routes user text to the engine and runs the session flows."""

    def __init__(
        self,
        *,
        config: Config,
        agent: AgentConfig,
        engine: Engine,
        summary_provider: Provider,
        summary_model: str,
        provider_name: str,
        store: SessionStore | None,
        renderer: Renderer,
        confirm: Callable[[str], bool],
        context_window: int,
    ) -> None:
        self.config = config
        self.agent = agent
        self.engine = engine
        self.summary_provider = summary_provider
        self.summary_model = summary_model
        self.provider_name = provider_name
        self.store = store
        self.out = renderer
        self.confirm = confirm
        self.context_window = context_window
        self.state = SessionState(started=_now())
        self.finished = False

    # ------------------------------------------------------------------ turns
    def send(self, text: str) -> Turn:
        """Send one user message, show the answer as it streams, save the turn."""
        self.out.answer_start(self.agent.name)
        turn = self.engine.chat(text, self._on_event)
        turn = replace(turn, number=self.state.queries + 1)
        self.out.answer_end(turn)
        self.state.turns.append(turn)
        self._save(turn)
        return turn

    def _on_event(self, event: EngineEvent) -> None:
        if isinstance(event, TextDelta):
            self.out.answer_delta(event.text)
        elif isinstance(event, Retrying):
            self.out.dim(f"{event.error}; retrying in {event.wait:.1f}s "
                         f"(attempt {event.attempt})")
        elif isinstance(event, ToolStarted):
            self.out.tool_call(describe_call(event.call))
        elif isinstance(event, ToolFinished):
            self.out.tool_result(event.call.name, event.result)

    def _save(self, turn: Turn) -> None:
        """Append the turn to the session file (creating it at the first query)."""
        if self.store is None or not self.config.session.auto_save or self.state.save_failed:
            return
        try:
            if self.state.live is None:
                self.state.live = self.store.new_session(
                    agent_key=self.agent.key, agent=self.agent.name,
                    agent_path=f"config:{self.agent.key}", model=self.engine.model,
                    provider=self.provider_name, now=self.state.started,
                    resumed_from=self.state.resumed_from,
                    previous_session=self.state.previous_session)
                if self.state.restored is not None:
                    self.state.live.append_turn(self.state.restored, self.agent.name)
            self.state.live.append_turn(turn, self.agent.name)
        except StoreError as exc:
            self.state.save_failed = True
            self.out.error(f"{exc} — the chat goes on in memory; nothing is saved from now on.")

    # ------------------------------------------------------------------ summaries
    def _summarize(self, turns: list[Turn], parent: Summary | None, focus: str | None,
                   ) -> SummaryOutcome:
        cfg = self.config.summary
        try:
            with self.out.spinner("Generating session summary..."):
                outcome = summarize(
                    self.summary_provider, turns, parent_summary=parent, focus=focus,
                    model=self.summary_model, max_words=cfg.max_words,
                    timeout_seconds=cfg.timeout_seconds,
                    max_output_tokens=self.agent.max_output_tokens,
                )
        except KeyboardInterrupt:
            outcome = SummaryOutcome(
                summary=extractive_summary(turns, parent_summary=parent, focus=focus,
                                           max_words=cfg.max_words, fallback=True),
                fallback_used=True, reason="interrupted",
            )
        if outcome.fallback_used:
            self.out.warn(f"The model's summary failed ({outcome.reason}); "
                          "a local extractive summary was saved instead.")
        return outcome

    def _finalize(self, focus: str | None = None) -> Summary | None:
        """Summarize the live session and write its summary block. None if nothing to do."""
        state = self.state
        if state.queries == 0:
            return None
        outcome = self._summarize(state.turns, state.parent_summary, focus)
        if state.live is not None and self.store is not None and not state.save_failed:
            try:
                with sigint_deferred():
                    self.store.finalize(state.live.session_id, outcome.summary,
                                        total_queries=state.queries, total_tokens=state.tokens)
            except StoreError as exc:
                self.out.error(f"could not write the summary: {exc}")
        return outcome.summary

    # ------------------------------------------------------------------ compact
    def compact(self, focus: str | None = None) -> None:
        state = self.state
        if state.queries == 0:
            self.out.info("Nothing to compact yet: this session has no queries.")
            return
        summary = self._finalize(focus)
        assert summary is not None
        sid = state.session_id or "(unsaved)"
        self.out.info(f"Saved session: {sid} ({state.queries} queries, "
                      f"{human_tokens(state.tokens)} tokens)")
        self.out.info("Starting new session with summary...")
        file_name = state.live.file_name if state.live else None
        self._start_child(
            parent_id=state.session_id, parent_file=file_name, summary=summary,
            date=state.started, queries=state.queries, tokens=state.tokens,
            grandparent=state.resumed_from,
        )

    def _start_child(self, *, parent_id: str | None, parent_file: str | None,
                     summary: Summary, date: datetime, queries: int, tokens: int,
                     grandparent: str | None) -> None:
        self.state = SessionState(started=_now(), resumed_from=parent_id,
                                  previous_session=parent_file, parent_summary=summary)
        prompt = build_restoration_prompt(
            session_id=parent_id or "(unsaved)", date=date, queries=queries, tokens=tokens,
            parent_of_parent=grandparent, file_name=parent_file or "(unsaved)",
            summary=summary, archive_tool=bool(self.engine.tools),
        )
        self.out.answer_start(self.agent.name)
        turn = self.engine.restore(prompt, self._on_event)
        context = f"Resumed from {parent_id or '(unsaved)'} ({queries} queries, " \
                  f"{human_tokens(tokens)} tokens)"
        turn = replace(turn, context=context, previous_session=parent_file)
        self.out.answer_end(turn)
        self.state.restored = turn

    # ------------------------------------------------------------------ resume
    def list_sessions(self) -> tuple[list[SessionInfo], list[tuple[str, str]]]:
        if self.store is None:
            raise StoreError("saving is off (--no-save): there are no sessions to list")
        listing = self.store.list_sessions(exclude=self.state.session_id)
        return list(listing.sessions), list(listing.problems)

    def resume(self, ref: str) -> None:
        if self.store is None:
            raise StoreError("saving is off (--no-save): there are no sessions to resume")
        listing = self.store.list_sessions(exclude=self.state.session_id)
        info = resolve(ref, listing)
        if info.agent != self.agent.name and not self.confirm(
            f"Session {info.session_id} was with agent {info.agent!r}, "
            f"not {self.agent.name!r}. Continue? (y/n) "
        ):
            self.out.info("Resume cancelled.")
            return
        self.out.info("Loading session...")
        if info.summary_problem:
            self.out.warn(f"{info.file_name}: {info.summary_problem}; treating it as unsummarized")
        if info.previous_session and not (self.store.root / info.previous_session).exists():
            self.out.warn(f"its parent {info.previous_session} is missing: the chain is broken "
                          "there (this session's own summary is still used)")
        summary = self.store.load_summary(info) if not info.summary_problem else None
        if summary is None:
            summary = self._summarize_old(info)
        if self.state.queries:
            self._finalize()
            self.out.info(f"Saved session: {self.state.session_id} ({self.state.queries} "
                          f"queries, {human_tokens(self.state.tokens)} tokens)")
        self.out.info(f"Found: {info.agent} - {info.date:%b %d, %H:%M} ({info.queries} queries, "
                      f"{human_tokens(info.tokens)} tokens)")
        self.out.info("Restoring context...")
        self._start_child(parent_id=info.session_id, parent_file=info.file_name,
                          summary=summary, date=info.date, queries=info.queries,
                          tokens=info.tokens, grandparent=info.resumed_from)

    def _summarize_old(self, info: SessionInfo) -> Summary:
        """A session without a summary (crashed, or its summary failed): summarize it now."""
        assert self.store is not None
        self.out.info(f"{info.session_id} has no summary; summarizing its transcript now.")
        transcript = self.store.load_transcript(info.session_id)
        turns = [t for t in transcript.turns if t.kind == "query"]
        if not turns:
            raise RollchatError(f"session {info.session_id} has no queries to resume from")
        outcome = self._summarize(turns, None, None)
        tokens = sum(t.usage.total for t in turns)
        try:
            with sigint_deferred():
                self.store.finalize(info.session_id, outcome.summary,
                                    total_queries=len(turns), total_tokens=tokens)
        except StoreError as exc:
            self.out.warn(f"could not save the new summary into {info.file_name}: {exc}")
        return outcome.summary

    # ------------------------------------------------------------------ exit
    def exit(self) -> None:
        """Save with a summary and say goodbye. Safe to call twice."""
        if self.finished:
            return
        self.finished = True
        state = self.state
        saving = self.store is not None and self.config.session.auto_save
        if state.queries and saving:
            self._finalize()
        if state.queries or state.restored:
            restoration = state.restoration_tokens
            lines = [f"Queries: {state.queries}", f"Session tokens: {state.tokens:,}"]
            if restoration:
                lines.append(f"Restoration tokens: {restoration:,}")
                lines.append(f"Total: {state.tokens + restoration:,}")
            if state.session_id:
                self.out.info(f"Saved session {state.session_id}")
            self.out.info(" | ".join(lines))
        self.out.info("Goodbye!")
