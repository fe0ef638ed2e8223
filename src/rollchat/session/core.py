"""The session core: the flows a user triggers (a turn, compact, resume, automatic compaction,
exit) as generators of events, with no terminal and no printing. The REPL, tests and later the
MCP server drive the same Session; policy.plan decides, the store saves, the engine calls."""

from __future__ import annotations

import time
from collections.abc import Callable, Generator, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Literal

from rollchat.compaction import policy
from rollchat.compaction.audit import audit, audit_line
from rollchat.compaction.policy import Plan, PolicyState, Situation
from rollchat.compaction.summarizer import Background, Summarizer, SummaryOutcome
from rollchat.config.settings import NO_SAVE_LOCATION, AgentConfig, AutoCompact, Config, auto_mode
from rollchat.domain import Message, Summary, Turn, Usage
from rollchat.engine.context import estimate_prompt, tail_sizes, tail_start
from rollchat.engine.core import Answer, Engine, quietly
from rollchat.engine.tool_output import ToolOutput
from rollchat.errors import RollchatError, StoreError, UsageError
from rollchat.events import (
    AnswerStarted,
    CompactionFinished,
    CompactionStarted,
    Ended,
    Event,
    Notice,
    Planned,
    Saved,
    SummaryFinished,
    SummaryStarted,
    TurnFinished,
)
from rollchat.interrupts import sigint_deferred
from rollchat.memory.layers import MemoryLayers, system_prompt, with_block
from rollchat.models.prices import chain_of, cost, price_for
from rollchat.models.tokens import TokenCounter
from rollchat.models.windows import WindowBook, WindowLearner
from rollchat.providers.base import ContextTooLongError, Provider, ToolSpec
from rollchat.session.checkpoint import checkpointed  # each tool call on disk as it ends
from rollchat.session.forks import agent_change, check_open, open_file
from rollchat.session.state import (
    UNSAVED,
    Parent,
    SessionState,
    carried_turns,
    failure_hint,
    now,
    restoration_prompt,
    restored_context,
)
from rollchat.storage.store import SessionInfo, Store
from rollchat.text.normalize import clean
from rollchat.text.wording import human_tokens, plural

if TYPE_CHECKING:
    from rollchat.memory.keeper import Memory
    from rollchat.session.handoff import Handed
    from rollchat.session.ops import UndoPoint

Flow = Generator[Event, None, None]
CompactChoice = Literal["compact", "later", "off"]
# Asks the user whether to compact now (auto_compact: ask), given the one-line question; None
# when nobody can be asked (piped input): that counts as "later".
CompactAsker = Callable[[str], CompactChoice | None]


class Session:
    """One chat session and its flows. Each flow method is a generator of events."""

    def __init__(
        self,
        *,
        config: Config,
        agent: AgentConfig,
        engine: Engine,
        summary_provider: Provider,
        summary_model: str,
        provider_name: str,
        store: Store,
        confirm: Callable[[str], bool],
        context_window: int,
        fork_refusal: str | None = None,  # why not to fork a session open elsewhere; None: fork
        windows: WindowBook | None = None,  # learned windows (None: in memory only)
        memory: Memory | None = None,  # facts and episodes across sessions (memory/)
        # the memory layers of each request; None: from ``memory``'s store (off without it)
        layers: MemoryLayers | None = None,
        ask_compact: CompactAsker | None = None,  # auto_compact: ask (None: nobody to ask)
    ) -> None:
        self.config = config
        self.agent = agent
        self.engine = engine
        self.provider_name = provider_name
        self.store = store
        self.confirm = confirm
        self.fork_refusal = fork_refusal
        self.state = SessionState(started=now())
        self.finished = False
        self.recorded = 0  # user messages recorded: a front end can check one was kept
        self.counter = TokenCounter(engine.model)
        self.budget = self._budget(context_window)
        engine.max_output_tokens = self.budget.max_output_tokens
        engine.tool_result_limit = self._tool_room
        engine.count = self.counter.count_text
        self.output = ToolOutput(config.tools, engine, self.counter, context_window)
        self.output.install_archive(store, None, lambda: self.state.turns)
        self.summarizer = Summarizer(summary_provider, model=summary_model,
                                     config=config.summary, budget=self.budget,
                                     counter=self.counter)
        self.windows = WindowLearner(windows or WindowBook(None), model=engine.model,
                                     base_url=agent.base_url, window=context_window,
                                     on_change=self._resize)
        if summary_provider is engine.provider and summary_model == engine.model:
            self.summarizer.refused = self.windows.summary_refused
        self.guards = PolicyState()
        self.undo: UndoPoint | None = None  # what the last compact replaced (session_ops)
        self.memory = memory
        if memory is not None:
            memory.install(engine)
        if layers is None and memory is not None:
            layers = MemoryLayers(memory.store, share=config.memory.max_share)
        self.layers = layers
        if layers is not None and config.session.history == "relevant":
            layers.dedupe = False  # an earlier message (and its block) may not be sent
        self.persona = engine.context.system  # the agent's system prompt (skills included)
        self._freeze_profile()
        if config.session.history == "relevant":
            from rollchat.engine.history import RelevantHistory

            engine.context.select = RelevantHistory()
        self.price = price_for(engine.model, config.prices)  # None: unknown (no cost shown)
        self.ask_compact = ask_compact
        self.auto_override: AutoCompact | None = None  # set by `auto on|off|ask` in the chat

    def _freeze_profile(self) -> None:
        """The system prompt of the context starting now: the persona and, with memory on,
        the user profile as it is now (frozen until the next compaction or resume, so the
        request prefix stays byte-identical; see memory/layers.py)."""
        if self.layers is not None:
            profile = self.layers.freeze(self.budget.window, self.counter.count_text)
            self.engine.context.system = system_prompt(self.persona, profile)

    def _block(self, text: str) -> str:
        """The context block of the user message ``text`` ("" with memory off)."""
        if self.layers is None:
            return ""
        return self.layers.block(text, self.budget.window, self.counter.count_text)

    @property
    def auto_mode(self) -> AutoCompact:
        """Automatic compaction in this session: on, off or ask (the config's, unless the
        chat changed it)."""
        return self.auto_override or auto_mode(self.config.session.auto_compact)

    def _budget(self, window: int) -> policy.Budget:
        cfg = self.config.session
        return policy.compute_budget(window, self.agent.max_output_tokens,
                                     cfg.compact_threshold, cfg.safety_margin_tokens)

    def _resize(self, window: int) -> None:
        """The model's window turned out smaller: budgets follow (see windows.py)."""
        self.budget = self._budget(window)
        self.engine.max_output_tokens = self.budget.max_output_tokens
        self.summarizer.resize(self.budget)
        self.output.resize(window)

    # ------------------------------------------------------------------ figures
    def _tool_specs(self) -> list[ToolSpec]:
        return list(self.engine.offered())

    def estimate(self, pending: Sequence[Message] = ()) -> int:
        """The size of the next prompt (see context.estimate_prompt)."""
        return estimate_prompt(self.counter, self.engine.context, list(pending),
                               self._tool_specs())

    def cost(self, usage: Usage | None = None) -> float | None:
        """Dollars for ``usage`` (default: this session's billed tokens); None when the
        model's price is unknown."""
        if self.price is None:
            return None
        return cost(self.state.billed_usage if usage is None else usage, self.price)

    def _tool_room(self) -> int:
        """Tokens a new tool result may take in the current tool loop (see ToolOutput)."""
        return self.output.room(self.budget.tokens, self.estimate())

    def list_sessions(self) -> tuple[list[SessionInfo], list[tuple[str, str]]]:
        listing = self.store.list_sessions(exclude=self.state.session_id)
        return list(listing.sessions), list(listing.problems)

    def set_title(self, text: str) -> str:
        """Give this session the title ``text`` (one line, trimmed: see titles.py), in its
        header now or, before its file exists, when the file is made. UsageError when the
        text is empty; StoreError when the file cannot be rewritten."""
        from rollchat.storage.titles import user_title

        try:
            title = user_title(text)
        except ValueError as exc:
            raise UsageError(f"{exc}: title NEW TITLE") from None
        if self.state.live is not None:
            self.state.live.set_title(title)
        self.state.title = title
        return title

    @property
    def title(self) -> str | None:
        """The title this session has so far: the user's, else its first query's first line."""
        from rollchat.storage.titles import first_line_title

        if self.state.title:
            return self.state.title
        first = next((t.user for t in self.state.turns if t.kind == "query"), None)
        return first_line_title(first) or None

    def _saved_title(self, summary: Summary) -> str | None:
        """The title this session's file has once ``summary`` is saved (see
        ``render_finalized``): the one it was given, else the summary's, else its first
        query's first line."""
        from rollchat.storage.titles import model_title

        return (self.state.title or (model_title(summary.title) if summary.title else None)
                or self.title)

    # ------------------------------------------------------------------ a turn
    def turn(self, text: str, handed: Handed | None = None) -> Flow:
        """Send one user message (cleaned: see rollchat.text.normalize), stream the answer, save the
        turn. Compacts first when the plan says so, and once more (then sends again) if the
        provider still answers that the context is too long. ``handed``: the context another
        agent's session handed over (see handoff.py), sent before the message in the same
        user message and kept as the turn's ``Context`` in the transcript."""
        text = clean(text)
        sent, note = (text, "") if handed is None else (handed.wrap(text), handed.note)
        block = self._block(text)
        pending = Message("user", with_block(block, sent))
        if self.layers is not None:
            for problem in self.layers.take_problems():
                yield Notice("warning", problem)
        size = self.counter.count_messages(self.engine.context.system, [pending],
                                           self._tool_specs())
        error = policy.too_big(size, self.budget, self.engine.model)
        if error is not None:
            turn = Turn("query", 0, now(), text, "", status="unanswered", error=error,
                        context=note)
            yield from self._record(turn, failure_hint(None, True))
            return
        situation = self._situation(pending)
        decided = policy.plan(situation)
        if decided.compact and decided.ask:
            decided = yield from self._propose(decided, situation)
        yield Planned(situation.estimate, self.budget.tokens, decided.compact, decided.reason)
        if decided.compact:
            compacted = yield from self._auto_compact(decided, pending)
            if compacted and block:  # a new context: its own profile, nothing sent yet
                block = self._block(text)
                pending = Message("user", with_block(block, sent))
        elif decided.presummarize:
            self.summarizer.start_background(self.state.background, self.state.turns,
                                             self.state.parent_summary)
        yield AnswerStarted(self.agent.name)
        answer: Answer = yield from checkpointed(self.engine.chat(sent, block), self, text,
                                                 note, block)
        if answer.turn.status == "unanswered" and isinstance(answer.error, ContextTooLongError):
            from rollchat.session.refusal import after_refusal

            answer = yield from after_refusal(self, answer, pending, sent, block)
        if self.layers is not None and answer.turn.status != "unanswered":
            self.layers.sent(self.counter.count_text)
        hint = failure_hint(answer.error, False) if answer.turn.status == "unanswered" else None
        if hint is not None and isinstance(answer.error, ContextTooLongError) and (
                self.auto_mode == "off"):  # the conversation is too long, not the message
            hint = ("The conversation no longer fits the model's window and automatic "
                    "compaction is off: type 'compact' (or 'auto on'), then press Up and "
                    "Enter to send your message again (it is kept in the transcript and the "
                    "history).")
        turn = answer.turn if handed is None else replace(answer.turn, user=text, context=note)
        yield from self._record(turn, hint)

    def _record(self, turn: Turn, hint: str | None) -> Flow:
        turn = replace(turn, number=self.state.queries + 1)
        self.state.add(turn)
        self.guards = replace(self.guards,
                              calls_since_compaction=self.guards.calls_since_compaction + 1,
                              turns_since_compaction=self.guards.turns_since_compaction + 1)
        yield from self._save(turn)  # on disk before the footer tells the user it is done
        self.recorded += 1
        yield TurnFinished(turn, hint, self.cost(turn.usage))

    def unsent(self, text: str) -> Flow:
        """Keep a message the chat ended before sending (a signal right after Enter)."""
        yield from self._record(Turn("query", 0, now(), clean(text), "", status="interrupted"),
                                None)

    def record_entry(self, turn: Turn) -> Flow:
        """Keep an entry that is not a query (a handoff to another agent) in the transcript."""
        self.state.add(turn)
        yield from self._save(turn)

    def ensure_file(self) -> Generator[Event, None, str | None]:
        """Make the session's file now (normally made at its first query); its id, or None
        when nothing is saved."""
        state = self.state
        if state.live is None and not state.save_failed:
            try:
                yield from open_file(self.store, state, self.agent, self.engine.model,
                                     self.provider_name, in_progress=True)
            except StoreError as exc:
                state.save_failed = True
                yield Notice("error", f"{exc} — the chat goes on in memory; nothing is saved "
                                      "from now on.")
        return state.session_id

    def _save(self, turn: Turn) -> Flow:
        """Append the turn to the session file (creating it at the first query)."""
        state = self.state
        if state.save_failed:
            return
        try:
            live = state.live or (yield from open_file(self.store, state, self.agent,
                                                       self.engine.model, self.provider_name,
                                                       cost=self.cost()))
            live.append_turn(turn, self.agent.name)
            live.set_totals(state.queries, state.billed, self.engine.context.reported_size,
                            self.cost())
        except StoreError as exc:
            state.save_failed = True
            yield Notice("error", f"{exc} — the chat goes on in memory; nothing is saved "
                                  "from now on.")
            return
        yield Saved(live.session_id, live.file_name)

    # ------------------------------------------------------------------ automatic compaction
    def _fixed_after(self, summary: Summary | None = None) -> int:
        """What a compacted context holds besides the kept turns: system prompt, summary and
        restoration exchange (the summary estimated until it is written)."""
        from rollchat.storage.transcript import render_summary_block

        size = (self.counter.count_text(render_summary_block(summary)) if summary is not None
                else int(self.summarizer.words * 1.4))
        system = self.counter.count_text(self.engine.context.system)
        return system + size + policy.RESTORATION_TOKENS

    def _situation(self, pending: Message, summary: Summary | None = None,
                   refused: bool = False) -> Situation:
        cfg = self.config.session
        return Situation(
            estimate=self.estimate([pending]), budget=self.budget, state=self.guards,
            fixed_after=self._fixed_after(summary),
            pending=self.counter.count_message(pending),
            tail=tail_sizes(self.counter, self.engine.context, cfg.keep_recent_turns),
            keep_turns=cfg.keep_recent_turns, enabled=self.auto_mode != "off",
            ask=self.auto_mode == "ask",
            every_turns=cfg.compact_every_turns, has_turns=self.state.query_turns > 0,
            refused=refused,
        )

    def _propose(self, decided: Plan, situation: Situation) -> Generator[Event, None, Plan]:
        """auto_compact: ask. One question (see ``proposal``); the plan the answer makes:
        compact now; later (asked again at the next gauge level, see policy); or off for
        this session. Nobody to ask (piped input) counts as later."""
        question = proposal(situation.estimate, self.budget.window)
        choice = self.ask_compact(question) if self.ask_compact is not None else None
        if choice == "compact":
            return decided
        level = policy.gauge_level(situation.estimate, self.budget.window)
        if choice == "off":
            self.auto_override = "off"
            yield Notice("info", "Automatic compaction is off for this session ('auto on' "
                                 "or 'auto ask' turns it back on; 'compact' compacts now).")
        else:
            self.guards = replace(self.guards, put_off_level=level)
            who = "" if choice == "later" else " (auto_compact: ask, and no terminal to ask)"
            when = ("compacting only once the next request would not fit otherwise"
                    if level >= len(policy.GAUGE_LEVELS)
                    else f"asking again when {policy.asked_again(level)}")
            yield Notice("info", f"Not compacting now{who}; {when}. 'compact' compacts at "
                                 "any time.")
        return replace(decided, compact=False, reason="put off by the user")

    def _auto_compact(self, decided: Plan, pending: Message) -> Generator[Event, None, bool]:
        """Summarize and continue in a child session that keeps the last turns verbatim.

        A compaction that leaves the next prompt still over the budget counts as a failure,
        so even a summary longer than what it replaced cannot make it compact every turn.
        """
        state = self.state
        before = self.estimate([pending])
        yield CompactionStarted(decided.reason, True, before, self.budget.window)
        try:
            summary = yield from self._finalize(quick=True)
            assert summary is not None
            # with the summary written, its real size decides how many turns fit
            situation = self._situation(pending, summary)
            kept = policy.kept_turns(situation.tail, decided.keep_turns,
                              situation.fixed_after + situation.pending, self.budget)
            context = self.engine.context
            tail = context.messages[tail_start(context.messages, context.prefix_len, kept):]
            parent_id = state.session_id
            carried = carried_turns(state.turns, sum(1 for m in tail if m.role == "user"),
                                    parent_id or UNSAVED)
            yield from self._start_child(state.as_parent(summary), quiet=True)
        except RollchatError as exc:
            failures = self.guards.consecutive_failures + 1
            self.guards = replace(self.guards, consecutive_failures=failures)
            yield Notice("warning", f"automatic compaction failed: {exc}")
            if failures >= policy.MAX_FAILURES:
                yield Notice("warning", f"automatic compaction failed {failures} times in a "
                                        "row; carrying on without it")
            return False
        for message in tail:
            self.engine.context.append(message)
        for turn in carried:
            self.state.add(turn)
        previous_failures = self.guards.consecutive_failures
        after = self.estimate([pending])
        self.guards = PolicyState(calls_since_compaction=0, tokens_after_compaction=after)
        if after > self.budget.tokens:
            self.guards = replace(self.guards, consecutive_failures=previous_failures + 1)
            yield Notice("warning", f"compaction left the context over budget ({after:,} of "
                                    f"{self.budget.tokens:,} tokens)")
        yield CompactionFinished(parent_id, True, len(carried), before, after)
        return True

    def set_auto(self, mode: AutoCompact) -> AutoCompact:
        """Change automatic compaction for this session (``auto on|off|ask``); the mode it
        had. A compaction put off before is proposed again at the next threshold. The mode it
        already has changes nothing (a "later" answer stands)."""
        previous = self.auto_mode
        if mode == previous:
            return previous
        self.auto_override = mode
        self.guards = replace(self.guards, put_off_level=None)
        return previous

    # ------------------------------------------------------------------ summaries
    def _summarize(self, turns: list[Turn], parent: Summary | None, focus: str | None, *,
                   background: Background | None = None, quick: bool = False,
                   chunks: list[list[Turn]] | None = None, model_calls: int | None = None,
                   within: float | None = None,
                   ) -> Generator[Event, None, tuple[SummaryOutcome, bool]]:
        """The summary, announced before and shown after; (outcome, interrupted). A Ctrl-C as
        it starts gives the local summary; one while it is shown is reported as ``interrupted``
        so that the caller saves it first, then stops."""
        try:
            yield SummaryStarted()
            outcome = self.summarizer.summarize(turns, parent, focus, background=background,
                                                quick=quick, chunks=chunks,
                                                model_calls=model_calls, within=within)
        except KeyboardInterrupt:
            outcome = self.summarizer.interrupted(turns, parent, focus)
        self.state.summary_usage += outcome.usage  # billed: counted in the totals and cost
        try:
            yield SummaryFinished(outcome.summary,
                                  outcome.reason if outcome.fallback_used else None)
            for learned in self.windows.take():
                yield Notice("warning", learned.line("the summary was written in smaller parts"))
            if outcome.fallback_used:
                yield Notice("warning", f"The model's summary failed ({outcome.reason}); "
                                        "a local extractive summary was saved instead.")
        except KeyboardInterrupt:
            return outcome, True
        return outcome, False

    def _finalize(self, focus: str | None = None, quick: bool = False,
                  within: float | None = None,
                  ending: bool = False) -> Generator[Event, None, Summary | None]:
        """Summarize the live session (see Summarizer) and save it; None if empty.
        ``ending``: the chat ends (fact extraction gets a deadline, not the background;
        ``within``: the seconds summary and extraction have together)."""
        state = self.state
        if not state.query_turns:
            return None
        started = time.monotonic()
        outcome, stop = yield from self._summarize(state.turns, state.parent_summary, focus,
                                                   background=state.background, quick=quick,
                                                   within=within)
        if state.live is not None and not state.save_failed:
            try:
                with sigint_deferred():
                    self.store.finalize(state.live.session_id, outcome.summary,
                                        total_queries=state.queries, total_tokens=state.billed,
                                        context_tokens=self.engine.context.reported_size,
                                        cost=self.cost())
            except StoreError as exc:
                state.summary_failed = True
                yield Notice("error", f"could not write the summary: {exc}")
            else:
                yield Saved(state.live.session_id, state.live.file_name)
        if stop:
            raise KeyboardInterrupt
        if self.memory is not None:  # facts from the last turns, the summary as an episode
            left = None if within is None else within - (time.monotonic() - started)
            yield from self.memory.at_summary(state.turns, state.session_id, outcome.summary,
                                              ending=ending, within=left,
                                              title=self._saved_title(outcome.summary))
        return outcome.summary

    # ------------------------------------------------------------------ compact
    def compact(self, focus: str | None = None) -> Flow:
        state, focus = self.state, focus and clean(focus)
        if state.queries == 0:
            yield Notice("info", "Nothing to compact yet: this session has no queries.")
            return
        yield CompactionStarted(f"compact{f' (focus: {focus})' if focus else ''}", False, 0,
                                self.budget.window)
        summary = yield from self._finalize(focus)
        assert summary is not None
        yield Notice("info", audit_line(audit(state.turns, summary, state.parent_summary)))
        yield self.saved_notice()
        yield Notice("info", "Starting new session with summary...")
        parent, before = state.as_parent(summary), self.estimate()
        yield from self._start_child(parent)
        self.guards = PolicyState()
        yield CompactionFinished(parent.session_id, False, 0, before, self.estimate())

    def saved_notice(self) -> Notice:
        """What became of the session just summarized (compact, fork, clear): saved, kept in
        memory only (--no-save), or saved only in part; never "saved" when it was not."""
        state = self.state
        name = state.session_id or UNSAVED
        size = f"{plural(state.queries, 'query')}, {human_tokens(state.billed)} tokens billed"
        if self.store.location == NO_SAVE_LOCATION:
            return Notice("info", f"Session {name} ({size}) was kept in memory only "
                                  "(--no-save): nothing was written")
        if state.save_failed:
            return Notice("warning", f"Session {name} ({size}) holds only the turns saved "
                                     "before the error; the later ones were not saved")
        if state.summary_failed:
            return Notice("warning", f"Session {name} ({size}) holds every turn but no "
                                     "summary; resuming it summarizes it then")
        return Notice("info", f"Saved session: {name} ({size})")

    def _start_child(self, parent: Parent, quiet: bool = False) -> Flow:
        """Start a child session: the agent gets the restoration prompt (and the archive tool
        for the parent's transcript) and its acknowledgment becomes the first entry."""
        chain = self.state.chain.plus(self.cost())  # the chain goes on (resume replaces it)
        # a title given before anything was saved names the session that takes its place
        title = self.state.title if self.state.live is None else None
        self.state.close()
        self.state = SessionState(started=now(), resumed_from=parent.session_id,
                                  previous_session=parent.file_name,
                                  parent_summary=parent.summary, forked=parent.forked,
                                  chain=chain, title=title)
        readable = parent.session_id is not None and parent.file_name is not None
        self.output.install_archive(self.store, parent.session_id if readable else None,
                                    lambda: self.state.turns)
        if self.memory is not None:
            self.memory.install(self.engine)
        prompt = restoration_prompt(parent, archive_tool=readable)
        self._freeze_profile()
        if not quiet:
            yield AnswerStarted(self.agent.name)
        restoring = self.engine.restore(prompt)
        answer: Answer = yield from (quietly(restoring) if quiet else restoring)
        context = restored_context(parent, automatic=quiet)
        # the prompt is kept in the child's file: it holds the parent's summary (see prune)
        turn = replace(answer.turn, context=context, previous_session=parent.file_name,
                       user=prompt)
        if not quiet:
            yield TurnFinished(turn, None, self.cost(turn.usage))
        self.state.restored = turn

    # ------------------------------------------------------------------ resume
    def resume(self, ref: str, fork: bool = False) -> Flow:
        """Continue a saved session from its summary, in a new linked session (``fork``: a
        fork, which leaves the session open: no ``Continued In`` link is written to it)."""
        from rollchat.storage.store import resolve

        index = getattr(self.store, "index", None)  # the files' index: no full listing
        if index is not None:
            info = index.resolve(ref, exclude=self.state.session_id)
            lineage = index.lineage([info])  # it and the sessions it continues
        else:
            listing = self.store.list_sessions(exclude=self.state.session_id)
            info, lineage = resolve(ref, listing), listing.sessions
        question = agent_change(info, self.agent)
        if question is not None and not self.confirm(question):
            yield Notice("info", "Resume cancelled.")
            return
        yield Notice("info", "Loading session...")
        elsewhere = yield from check_open(self.store, info, None if fork else self.fork_refusal)
        if info.summary_problem:
            yield Notice("warning", f"{info.file_name}: {info.summary_problem}; treating it as "
                                    "unsummarized")
        if info.previous_session and not self.store.has_file(info.previous_session):
            yield Notice("warning", f"its parent {info.previous_session} is missing: the chain "
                                    "is broken there (this session's own summary is still used)")
        summary = self.store.load_summary(info) if not info.summary_problem else None
        if summary is None:
            from rollchat.compaction.unsummarized import summarize_unsummarized

            summary = yield from summarize_unsummarized(
                info, store=self.store, summarizer=self.summarizer, confirm=self.confirm,
                summarize=self._summarize, save=not elsewhere)
        if self.state.queries:
            yield from self._finalize()
            yield Notice("info", f"Saved the current session: {self.state.session_id} "
                                 f"({plural(self.state.queries, 'query')}, "
                                 f"{human_tokens(self.state.tokens)} tokens)")
        yield Notice("info", f"Found: {info.session_id} · {info.agent} · "
                             f"{info.date:%Y-%m-%d %H:%M} ({plural(info.queries, 'query')}, "
                             f"{human_tokens(info.tokens)} tokens)")
        yield Notice("info", "Restoring context...")
        yield from self._start_child(Parent(info.session_id, info.file_name, summary, info.date,
                                            info.queries, info.tokens, info.resumed_from,
                                            elsewhere or fork, by_user=fork and not elsewhere))
        self.state.chain = chain_of(info, lineage)  # the chain continued, as recorded
        self.guards, self.undo = PolicyState(), None

    # ------------------------------------------------------------------ memory
    def _memory(self) -> Memory:
        if self.memory is None:
            raise UsageError("memory is off (memory.enabled is false, or --no-save)")
        return self.memory

    def remember(self, text: str) -> Flow:
        """``remember TEXT``: keep a fact (see memory/keeper.py)."""
        state = self.state
        yield from self._memory().remember(clean(text), state.session_id,
                                           state.queries or None)

    def forget(self, fact_id: int) -> Flow:
        yield from self._memory().forget(fact_id)

    def extract_memory(self) -> bool:
        """Facts from the latest turns, in the background (the REPL calls this when the chat
        is idle); their events come from ``take_memory_events``. False when nothing started:
        nothing new, an extraction under way, or memory off."""
        if self.memory is None or self.finished:
            return False
        return self.memory.start(self.state.turns, self.state.session_id, queue=False)

    def take_memory_events(self) -> list[Event]:
        """What the background extractions found since the last call (to draw)."""
        return self.memory.take() if self.memory is not None else []

    # ------------------------------------------------------------------ exit
    def exit(self, within: float | None = None) -> Flow:
        """Save with a summary (``within``: see Summarizer). Safe to call twice."""
        if not self.finished:
            self.finished, state = True, self.state
            if state.queries and not state.save_failed:
                yield from self._finalize(within=within, ending=True)
            state.close()
            spent = self.cost()
            chain = state.chain.plus(spent)
            yield Ended(state.session_id, state.queries, state.tokens, state.restoration_tokens,
                        state.summary_tokens,
                        state.save_failed, state.restored is not None, state.summary_failed,
                        cost=spent, chain_cost=chain.spent if chain.known else None,
                        chain_sessions=chain.sessions, chain_unpriced=chain.unpriced,
                        in_memory=self.store.location == NO_SAVE_LOCATION)


def proposal(estimate: int, window: int) -> str:
    """The one-line question of auto_compact: ask (the answers: see CompactChoice)."""
    return (f"Context at {estimate / window:.0%} (≈{human_tokens(estimate)} of "
            f"{human_tokens(window)} tokens). Compact now? [c]ompact / [l]ater / "
            "[o]ff for this session: ")
