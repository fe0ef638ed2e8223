"""The chat application: one live session, its turns, and the compact / resume / exit flows.

Ties the engine (model calls), the store (files) and the renderer (screen) together; the REPL
and piped input both drive it one line at a time.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from typing import TYPE_CHECKING

from rollchat.autocompact import carried_turns, estimate_prompt, tail_start
from rollchat.config import AgentConfig, Config
from rollchat.domain import Message, Summary, Turn
from rollchat.engine import Engine, EngineEvent, Retrying, ToolFinished, ToolStarted, describe_call
from rollchat.errors import RollchatError, StoreError
from rollchat.interrupts import sigint_deferred
from rollchat.policy import MAX_FAILURES, PolicyState, compute_budget, should_compact
from rollchat.providers.base import (
    AuthError,
    ContextTooLongError,
    Provider,
    ProviderError,
    TextDelta,
)
from rollchat.render import Renderer
from rollchat.summarizer import Background, Summarizer
from rollchat.text import plural
from rollchat.tokens import TokenCounter, human_tokens
from rollchat.tools import ARCHIVE_TOOL_NAME

if TYPE_CHECKING:  # the rest is imported when first needed, after the prompt is shown
    from rollchat.store import LiveSession, SessionInfo, SessionStore

RESTORATION_TOKENS = 400  # the restoration prompt's text and the acknowledgment, roughly
PRESUMMARY_SHARE = 0.7  # start the summary in the background past this share of the budget
POST_COMPACTION_SHARE = 0.5  # a compaction keeps fewer turns rather than leave more than this


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

    # summaries made in the background from ~70% of the budget on (see summarizer)
    background: Background = field(default_factory=Background)

    query_turns: int = 0  # turns with a query: asked here, or carried over from the parent
    queries: int = 0  # queries asked in this session (carried-over turns excluded)
    tokens: int = 0  # tokens of those queries

    def add(self, turn: Turn) -> None:
        """Record a turn; the totals are kept as it goes (no rescans on the hot path)."""
        self.turns.append(turn)
        if turn.kind != "restored":
            self.query_turns += 1
        if turn.kind == "query":
            self.queries += 1
            self.tokens += turn.usage.total

    @property
    def restoration_tokens(self) -> int:
        return self.restored.usage.total if self.restored else 0

    @property
    def session_id(self) -> str | None:
        return self.live.session_id if self.live else None


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
        self.provider_name = provider_name
        self.store = store
        self.out = renderer
        self.confirm = confirm
        self.state = SessionState(started=_now())
        self.finished = False
        self.counter = TokenCounter(engine.model)
        cfg = config.session
        self.budget = compute_budget(context_window, agent.max_output_tokens,
                                     cfg.compact_threshold, cfg.safety_margin_tokens)
        engine.max_output_tokens = self.budget.max_output_tokens
        engine.tool_result_limit = self._tool_room
        self.summarizer = Summarizer(summary_provider, model=summary_model,
                                     config=config.summary, budget=self.budget,
                                     counter=self.counter, out=renderer)
        self.policy = PolicyState()
        self.last_estimate: int | None = None

    def warm_up(self) -> None:
        """Load what the first message needs (tokenizer, summarizer, markdown), meant for a
        background thread once the prompt is shown."""
        import importlib

        self.counter.count_text("warm up")
        for module in ("rich.markdown", "rollchat.compaction", "rollchat.restore",
                       "rollchat.tools.archive"):
            importlib.import_module(module)

    def notices(self) -> None:
        """Warnings worth showing once, after the banner."""
        if self.budget.warning:
            self.out.warn(self.budget.warning)

    def estimate(self, pending: list[Message] | None = None) -> int:
        """The size of the next prompt (see autocompact.estimate_prompt)."""
        specs = [t.spec for t in self.engine.tools.values()]
        return estimate_prompt(self.counter, self.engine.context, pending or [], specs)

    def _tool_room(self, in_flight: Sequence[Message]) -> int:
        """Tokens a new tool result may take in the current tool loop."""
        return self.budget.tokens - self.estimate(list(in_flight))

    # ------------------------------------------------------------------ turns
    def send(self, text: str) -> Turn:
        """Send one user message, show the answer as it streams, save the turn.

        Compacts first when the next prompt would exceed the budget, and once more (then
        sends again) if the provider still answers that the context is too long.
        """
        pending = Message("user", text)
        too_big = self._too_big(pending)
        if too_big is not None:
            turn = Turn("query", 0, _now(), text, "", status="unanswered", error=too_big)
        else:
            self._maybe_compact(pending)
            self.out.answer_start(self.agent.name)
            turn = self.engine.chat(text, self._on_event)
        if (too_big is None and turn.status == "unanswered" and self.config.session.auto_compact
                and isinstance(self.engine.last_error, ContextTooLongError)):
            self.out.answer_abort()
            self.out.warn("The provider says the context is too long.")
            if self._auto_compact("the provider said the context is too long", pending):
                self.out.info("Sending your message again.")
                self.out.answer_start(self.agent.name)
                turn = self.engine.chat(text, self._on_event)
        turn = replace(turn, number=self.state.queries + 1)
        self.state.add(turn)
        self.policy = replace(self.policy,
                              calls_since_compaction=self.policy.calls_since_compaction + 1,
                              turns_since_compaction=self.policy.turns_since_compaction + 1)
        self._save(turn)  # on disk before the footer tells the user the turn is done
        self.out.answer_end(turn, self._hint(turn, too_big is not None))
        return turn

    def _too_big(self, pending: Message) -> str | None:
        """Why a message cannot be sent at all (it alone overflows the window), or None."""
        room = self.budget.window - self.budget.max_output_tokens
        specs = [t.spec for t in self.engine.tools.values()]
        size = self.counter.count_messages(self.engine.context.system, [pending], specs)
        if size <= room:
            return None
        return (f"message too long: about {size:,} tokens, and {self.engine.model}'s window is "
                f"{self.budget.window:,} ({room:,} usable with {self.budget.max_output_tokens:,}"
                " kept for the answer); it was not sent")

    def _hint(self, turn: Turn, too_big: bool) -> str | None:
        """What to do about an answer that failed, by the kind of failure."""
        if turn.status != "unanswered":
            return None
        error = None if too_big else self.engine.last_error
        if too_big or isinstance(error, ContextTooLongError):
            return "Shorten or split the message (it is kept in the transcript and the history)."
        if isinstance(error, AuthError):
            return ("Check the API key: ANTHROPIC_API_KEY, OPENAI_API_KEY or the variable the "
                    "agent's api_key_env names. Your message was kept.")
        if isinstance(error, ProviderError) and not error.retryable:
            return "Your message was kept in the transcript and the input history."
        return "Your message was kept; press Up and Enter to send it again."

    # ------------------------------------------------------------------ automatic compaction
    def _maybe_compact(self, pending: Message) -> None:
        cfg = self.config.session
        estimate = self.estimate([pending])
        self.last_estimate = estimate
        decision = should_compact(
            estimate, self.budget, self.policy, enabled=cfg.auto_compact,
            every_turns=cfg.compact_every_turns, expected_after=self._expected_after(pending),
        )
        if decision.compact:
            self._auto_compact(decision.reason, pending)
        elif cfg.auto_compact and estimate >= PRESUMMARY_SHARE * self.budget.tokens:
            self.summarizer.start_background(self.state.background, self.state.turns,
                                             self.state.parent_summary)

    def _kept_tail(self, pending: Message, summary: Summary | None = None) -> list[Message]:
        """The last turns kept verbatim: ``keep_recent_turns``, fewer when the prompt right
        after the compaction would otherwise take more than half of the budget (a compaction
        must leave real room, or the next turn compacts again). With the ``summary`` written,
        its real size counts, else an estimate."""
        ctx = self.engine.context
        keep = self.config.session.keep_recent_turns
        base = self._fixed_after(summary) + self.counter.count_message(pending)
        while True:
            tail = ctx.messages[tail_start(ctx.messages, ctx.prefix_len, keep):]
            size = sum(self.counter.count_message(m) for m in tail)
            if keep <= 0 or base + size <= self.budget.tokens * POST_COMPACTION_SHARE:
                return tail
            keep -= 1

    def _fixed_after(self, summary: Summary | None = None) -> int:
        """What a compacted context holds besides the kept tail: system prompt, summary and
        restoration exchange (the summary estimated until it is written)."""
        from rollchat.transcript import render_summary_block

        size = (self.counter.count_text(render_summary_block(summary)) if summary is not None
                else int(self.summarizer.words * 1.4))
        return self.counter.count_text(self.engine.context.system) + size + RESTORATION_TOKENS

    def _expected_after(self, pending: Message) -> int:
        """The prompt size right after a compaction: system, summary, restoration, tail."""
        tail = self._kept_tail(pending)
        kept = sum(self.counter.count_message(m) for m in [*tail, pending])
        return self._fixed_after() + kept

    def _auto_compact(self, reason: str, pending: Message) -> bool:
        """Summarize and continue in a child session that keeps the last turns verbatim.

        A compaction that leaves the next prompt still over the budget counts as a failure,
        so even a summary longer than what it replaced cannot make it compact every turn.
        """
        state = self.state
        if not state.query_turns:
            return False
        self.out.info(f"{reason[:1].upper()}{reason[1:]}: compacting "
                      f"(window {human_tokens(self.budget.window)}).")
        try:
            summary = self._finalize(quick=True)
            assert summary is not None
            tail = self._kept_tail(pending, summary)
            kept = sum(1 for m in tail if m.role == "user")
            parent_id = state.session_id
            carried = carried_turns(state.turns, kept, parent_id or "(unsaved)")
            self._start_child(
                parent_id=parent_id, parent_file=state.live.file_name if state.live else None,
                summary=summary, date=state.started, queries=state.queries,
                tokens=state.tokens, grandparent=state.resumed_from, quiet=True,
            )
        except RollchatError as exc:
            failures = self.policy.consecutive_failures + 1
            self.policy = replace(self.policy, consecutive_failures=failures)
            self.out.warn(f"automatic compaction failed: {exc}")
            if failures >= MAX_FAILURES:
                self.out.warn(f"automatic compaction failed {failures} times in a row; "
                              "carrying on without it")
            return False
        for message in tail:
            self.engine.context.append(message)
        for turn in carried:
            self.state.add(turn)
        previous_failures = self.policy.consecutive_failures
        after = self.estimate([pending])
        self.policy = PolicyState(calls_since_compaction=0, tokens_after_compaction=after)
        if after > self.budget.tokens:
            failures = previous_failures + 1
            self.policy = replace(self.policy, consecutive_failures=failures)
            self.out.warn(f"compaction left the context over budget ({after:,} of "
                          f"{self.budget.tokens:,} tokens)")
        kept_text = (f"the last {plural(kept, 'turn')} kept verbatim" if kept
                     else "no recent turn kept: too large for this window")
        self.out.info(f"Compacted {parent_id or 'this session'} into a summary; continuing in "
                      f"a new session ({kept_text}).")
        return True

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
                for earlier in self.state.turns[:-1]:  # turns carried over from the parent
                    self.state.live.append_turn(earlier, self.agent.name)
            self.state.live.append_turn(turn, self.agent.name)
        except StoreError as exc:
            self.state.save_failed = True
            self.out.error(f"{exc} — the chat goes on in memory; nothing is saved from now on.")

    # ------------------------------------------------------------------ summaries
    def _finalize(self, focus: str | None = None, quick: bool = False) -> Summary | None:
        """Summarize the live session and write its summary block. None if nothing to do.
        ``quick``: see Summarizer.summarize."""
        state = self.state
        if not state.query_turns:
            return None
        outcome = self.summarizer.summarize(state.turns, state.parent_summary, focus,
                                            background=state.background, quick=quick)
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
        self.out.info(f"Saved session: {sid} ({self.queries_text(state.queries)}, "
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
                     grandparent: str | None, quiet: bool = False) -> None:
        """Start a child session: the agent gets the restoration prompt (and the archive tool
        for the parent's transcript) and its acknowledgment becomes the first entry."""
        self.state = SessionState(started=_now(), resumed_from=parent_id,
                                  previous_session=parent_file, parent_summary=summary)
        from rollchat.restore import build_restoration_prompt
        from rollchat.tools.archive import archive_tool

        self.engine.tools.pop(ARCHIVE_TOOL_NAME, None)
        if self.store is not None and parent_id is not None and parent_file is not None:
            self.engine.tools[ARCHIVE_TOOL_NAME] = archive_tool(self.store, parent_id)
        prompt = build_restoration_prompt(
            session_id=parent_id or "(unsaved)", date=date, queries=queries, tokens=tokens,
            parent_of_parent=grandparent, file_name=parent_file or "(unsaved)",
            summary=summary, archive_tool=ARCHIVE_TOOL_NAME in self.engine.tools,
        )
        if not quiet:
            self.out.answer_start(self.agent.name)
        turn = self.engine.restore(prompt, self._on_event if not quiet else lambda e: None)
        how = "Compacted automatically from" if quiet else "Resumed from"
        context = (f"{how} {parent_id or '(unsaved)'} ({self.queries_text(queries)}, "
                   f"{human_tokens(tokens)} tokens)")
        turn = replace(turn, context=context, previous_session=parent_file)
        if not quiet:
            self.out.answer_end(turn)
        self.state.restored = turn

    # ------------------------------------------------------------------ resume
    @staticmethod
    def queries_text(queries: int) -> str:
        return plural(queries, 'query')

    def list_sessions(self) -> tuple[list[SessionInfo], list[tuple[str, str]]]:
        if self.store is None:
            raise StoreError("saving is off (--no-save): there are no sessions to list")
        listing = self.store.list_sessions(exclude=self.state.session_id)
        return list(listing.sessions), list(listing.problems)

    def resume(self, ref: str) -> None:
        if self.store is None:
            raise StoreError("resuming starts a new saved session: it needs saving on "
                             "(drop --no-save, or set session.auto_save: true)")
        from rollchat.store import resolve

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
            self.out.info(f"Saved the current session: {self.state.session_id} "
                          f"({self.queries_text(self.state.queries)}, "
                          f"{human_tokens(self.state.tokens)} tokens)")
        self.out.info(f"Found: {info.session_id} · {info.agent} · {info.date:%Y-%m-%d %H:%M} "
                      f"({self.queries_text(info.queries)}, {human_tokens(info.tokens)} tokens)")
        self.out.info("Restoring context...")
        self._start_child(parent_id=info.session_id, parent_file=info.file_name,
                          summary=summary, date=info.date, queries=info.queries,
                          tokens=info.tokens, grandparent=info.resumed_from)

    def _summarize_old(self, info: SessionInfo) -> Summary:
        """A session without a summary (crashed, or its summary failed): summarize it now."""
        assert self.store is not None
        self.out.info(f"{info.session_id} has no summary; summarizing its transcript now.")
        transcript = self.store.load_transcript(info.session_id)
        turns = [t for t in transcript.turns if t.kind != "restored"]
        if not turns:
            raise RollchatError(f"session {info.session_id} has no queries to resume from")
        outcome = self.summarizer.summarize(turns, None, None)
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
        if state.queries and saving and not state.save_failed:
            self._finalize()
        if state.queries or state.restored:
            restoration = state.restoration_tokens
            lines = [f"Queries: {state.queries}", f"Session tokens: {state.tokens:,}"]
            if restoration:
                lines.append(f"Restoration tokens: {restoration:,}")
                lines.append(f"Total: {state.tokens + restoration:,}")
            if state.session_id and state.save_failed:
                self.out.warn(f"Session {state.session_id} holds only the turns saved before "
                              "the error; the later ones were not saved")
            elif state.session_id:
                self.out.info(f"Saved session: {state.session_id}")
            self.out.info(" | ".join(lines))
        self.out.info("Goodbye!")
