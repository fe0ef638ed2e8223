"""The one owner of compaction in a session: the budget, the guards, the summarizer, the plan
of automatic compaction (and its question with auto_compact: ask), and the start of the child
session that continues from a summary. Its flows take the live state and return the next."""

from __future__ import annotations

import time
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Literal

from rollchat.compaction import policy
from rollchat.compaction.call import SummaryOutcome
from rollchat.compaction.policy import Plan, PolicyState, Situation
from rollchat.compaction.prefixed import INSTRUCTION_TOKENS
from rollchat.compaction.restore import summary_once
from rollchat.compaction.server import signed_to_send
from rollchat.compaction.summarizer import Background, Summarizer
from rollchat.config.settings import AgentConfig, AutoCompact, Config, auto_mode
from rollchat.domain import Message, Summary, Turn, Usage
from rollchat.engine.context import estimate_prompt, tail_sizes, tail_start
from rollchat.engine.core import Answer, Engine
from rollchat.engine.runner import framework_state
from rollchat.errors import RollchatError, StoreError
from rollchat.events import (
    AnswerStarted,
    CompactionFinished,
    CompactionStarted,
    Event,
    Notice,
    Planned,
    Saved,
    SummaryFinished,
    SummaryStarted,
    TurnFinished,
)
from rollchat.interrupts import sigint_deferred
from rollchat.models.calls import Call, cost_of
from rollchat.models.current import CurrentModel
from rollchat.models.tokens import TokenCounter
from rollchat.models.windows import WindowLearner
from rollchat.providers.anthropic_compaction import COMPACTION as ANTHROPIC_COMPACTION
from rollchat.providers.base import ChatRequest
from rollchat.providers.names import binds_thinking
from rollchat.session.state import (
    UNSAVED,
    Parent,
    SessionState,
    carried_turns,
    restoration_prompt,
    restored_context,
    saved_title,
    tools_too_big,
)
from rollchat.session.steps import proposal, quietly, saved_notice
from rollchat.session.summary_notes import summary_notices
from rollchat.storage.store import Store

if TYPE_CHECKING:
    from rollchat.memory.keeper import Memory
    from rollchat.session.hooked import SessionHooks

Flow = Generator[Event, None, None]
CompactChoice = Literal["compact", "later", "off"]
# Asks the user whether to compact now (auto_compact: ask), given the one-line question; None
# when nobody can be asked (piped input): that counts as "later".
CompactAsker = Callable[[str], CompactChoice | None]


@dataclass(frozen=True)
class Surroundings:
    """What a compaction works with besides the engine: where sessions are saved, the
    memory (None: off), and ``continue_in``: the
    session goes on in a new state, in a new context whose archive tool reads the parent
    (None: none), from the moment the child exists (see Session.continue_in)."""

    store: Store
    memory: Memory | None
    continue_in: Callable[[SessionState, str | None], None]
    retry_save: Callable[[SessionState], Flow]  # after a failed write (see Recorder.retry)
    hooks: SessionHooks | None = None  # the user's PreCompact/PostCompact (session/hooked.py)


class Compactor:
    """Summaries and compactions of one session (see the module docstring)."""

    def __init__(self, *, config: Config, agent: AgentConfig, engine: Engine,
                 counter: TokenCounter, summarizer: Summarizer, current: CurrentModel,
                 budget: policy.Budget, around: Surroundings,
                 ask: CompactAsker | None = None) -> None:
        self.config, self.agent, self.engine = config, agent, engine
        self.counter, self.summarizer, self.current = counter, summarizer, current
        self.budget, self.around, self.ask = budget, around, ask
        self.guards = PolicyState()
        self.auto_override: AutoCompact | None = None  # set by `auto on|off|ask` in the chat

    # ------------------------------------------------------------------ figures
    @property
    def windows(self) -> WindowLearner:
        """The window learner of the model now current (``model NAME`` changes it)."""
        return self.current.windows

    @property
    def auto_mode(self) -> AutoCompact:
        """Automatic compaction in this session: on, off or ask (the config's, unless the
        chat changed it)."""
        return self.auto_override or auto_mode(self.config.session.auto_compact)

    def resize(self, budget: policy.Budget) -> None:
        """The window turned out smaller: the budget and the summaries follow."""
        self.budget = budget
        self.summarizer.resize(budget)

    def estimate(self, pending: Sequence[Message] = ()) -> int:
        """The size of the next prompt (see context.estimate_prompt)."""
        return estimate_prompt(self.counter, self.engine.context, list(pending),
                               list(self.engine.offered()))

    def unsendable(self, pending: Message) -> str | None:
        """Why ``pending`` cannot be sent even into an empty context (the budget's refusal,
        naming the tools' specs when they alone are why), or None when it fits."""
        offered = list(self.engine.offered())
        size = self.counter.count_messages(self.engine.context.system, [pending], offered)
        error = policy.too_big(size, self.budget, self.engine.model)
        if error is None:
            return None
        tools = self.counter.count_messages("", [], offered)
        return tools_too_big(error, tools, policy.too_big(size - tools, self.budget, ""))

    def cached_prefix(self) -> ChatRequest | None:
        """The chat's next request without a new message, for a summary request that reuses
        it (the provider's prompt cache: compaction/prefixed.py); None when summaries go to
        another provider or model (``summary.provider``/``summary.model``: no cache to share),
        the working context is a relevant-history selection (it may not hold every turn),
        holds no conversation, or leaves no room for the instruction and the summary."""
        context, summarizer = self.engine.context, self.summarizer
        if summarizer.provider is not self.engine.provider or \
                summarizer.model != self.engine.model:
            return None
        if context.select is not None or len(context.messages) <= context.prefix_len:
            return None
        room = self.budget.window - self.budget.max_output_tokens - INSTRUCTION_TOKENS
        if self.estimate() > room:
            return None
        return self.engine.request(context.request_messages())

    def cost(self, state: SessionState) -> float | None:
        """Dollars billed so far in ``state``, from its call records (each priced with the
        model that answered); None when no price is known ($0 before the first call of a
        model whose price is known)."""
        return cost_of(state.calls, self.current.price is not None)

    def priced(self, purpose: Literal["turn", "restoration"], turn: Turn,
               made: Sequence[Usage] = ()) -> list[Call]:
        """The records of ``turn``'s model calls (``made``: each one's usage, one per tool
        round; () for none made), answered by the model now current."""
        current = self.current
        return [Call.priced(purpose, current.name, current.provider_name, usage, current.price)
                for usage in made]

    def counted(self, turns: bool = True) -> None:
        """A model call was made (``turns``: for a query): the guards count it."""
        g = self.guards
        self.guards = replace(g, calls_since_compaction=g.calls_since_compaction + 1,
                              turns_since_compaction=g.turns_since_compaction + int(turns))

    def reset(self, guards: PolicyState | None = None) -> None:
        """A new context (compact, resume, fork, clear), or ``guards`` put back by undo."""
        self.guards = guards or PolicyState()

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

    # ------------------------------------------------------------------ the plan
    def fixed_after(self, summary: Summary | None = None) -> int:
        """What a compacted context holds besides the kept turns: system prompt, summary and
        restoration exchange (the summary estimated until it is written)."""
        from rollchat.storage.transcript import render_summary_block

        size = (self.counter.count_text(render_summary_block(summary)) if summary is not None
                else int(self.summarizer.words * 1.4))
        system = self.counter.count_text(self.engine.context.system)
        return system + size + policy.RESTORATION_TOKENS

    def situation(self, state: SessionState, pending: Message, summary: Summary | None = None,
                  refused: bool = False) -> Situation:
        cfg, mode = self.config.session, self.auto_mode
        return Situation(
            estimate=self.estimate([pending]), budget=self.budget, state=self.guards,
            fixed_after=self.fixed_after(summary),
            pending=self.counter.count_message(pending),
            tail=tail_sizes(self.counter, self.engine.context, cfg.keep_recent_turns),
            keep_turns=cfg.keep_recent_turns, enabled=mode != "off", ask=mode == "ask",
            every_turns=cfg.compact_every_turns, has_turns=state.query_turns > 0,
            refused=refused,
        )

    def plan(self, state: SessionState,
             pending: Message) -> Generator[Event, None, tuple[Plan, int]]:
        """Whether to compact before sending ``pending`` (asked first with auto_compact: ask),
        and the estimate of the request it looked at."""
        situation = self.situation(state, pending)
        decided = policy.plan(situation)
        if decided.compact and decided.ask:
            decided = yield from self._propose(decided, situation)
        return decided, situation.estimate

    def _propose(self, decided: Plan, situation: Situation) -> Generator[Event, None, Plan]:
        """auto_compact: ask. One question (see ``proposal``); the plan the answer makes:
        compact now; later (asked again at the next gauge level, see policy); or off for
        this session. Nobody to ask (piped input) counts as later."""
        question = proposal(situation.estimate, self.budget.window)
        choice = self.ask(question) if self.ask is not None else None
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

    # ------------------------------------------------------------------ summaries
    def summarize(self, state: SessionState, turns: list[Turn], parent: Summary | None,
                  focus: str | None, *, background: Background | None = None,
                  quick: bool = False, chunks: list[list[Turn]] | None = None,
                  model_calls: int | None = None, within: float | None = None,
                  prefix: ChatRequest | None = None, local: bool = False,
                  ) -> Generator[Event, None, tuple[SummaryOutcome, bool]]:
        """The summary, announced before and shown after; (outcome, interrupted). A Ctrl-C as
        it starts gives the local summary; one while it is shown is reported as ``interrupted``
        so that the caller saves it first, then stops. Its usage is billed to ``state``."""
        try:
            yield SummaryStarted()
            outcome = self.summarizer.summarize(turns, parent, focus, background=background,
                                                quick=quick, chunks=chunks, local=local,
                                                model_calls=model_calls, within=within,
                                                prefix=prefix)
        except KeyboardInterrupt:
            outcome = self.summarizer.interrupted(turns, parent, focus)
        model = self.summarizer.model  # billed: counted in the totals and cost, at its price
        call = Call.priced("summary", model, self.config.summary.provider or
                           self.current.provider_name, outcome.usage, self.current.price_of(model))
        state.charge(call)
        try:
            yield SummaryFinished(outcome.summary,
                                  outcome.reason if outcome.fallback_used else None)
            yield from summary_notices(outcome, self.windows.take(),
                                       self.summarizer.take_notes(), call.cost)
        except KeyboardInterrupt:
            return outcome, True
        return outcome, False

    def finalize(self, state: SessionState, focus: str | None = None, quick: bool = False,
                 within: float | None = None, ending: bool = False,
                 local: bool = False) -> Generator[Event, None, Summary | None]:
        """Summarize the live session (see Summarizer) and save it; None if empty.
        ``ending``: the chat ends (fact extraction gets a deadline, not the background;
        ``within``: the seconds summary and extraction have together; ``local``: no model)."""
        if not state.query_turns:
            return None
        yield from self.around.retry_save(state)  # what a failed write held, before the summary
        started = time.monotonic()
        outcome, stop = yield from self.summarize(state, state.turns, state.parent_summary,
                                                  focus, background=state.background,
                                                  quick=quick, within=within,
                                                  prefix=self.cached_prefix(), local=local)
        kept, problem = framework_state(self.engine.settings.runner)
        if problem:
            yield Notice("warning", problem)
        summary = replace(outcome.summary, framework_state=kept)  # given back at resume
        yield from self._save_summary(state, summary)
        if stop:
            raise KeyboardInterrupt
        memory = self.around.memory
        if memory is not None:  # facts from the last turns, the summary as an episode
            left = None if within is None else within - (time.monotonic() - started)
            yield from memory.at_summary(state.turns, state.session_id, summary,
                                         ending=ending, within=left,
                                         title=saved_title(state, summary))
            if self.bill_memory(state) and not state.summary_failed:
                try:  # the exit's extraction came after the summary: the header counts it
                    self._write_summary(state, summary)
                except StoreError as exc:
                    yield Notice("warning", f"the cost of fact extraction is not in the "
                                            f"session file's header: {exc}")
        return summary

    def bill_memory(self, state: SessionState) -> bool:
        """The memory's extraction calls made since the last look (at exit, at a compaction,
        in the background), each billed to ``state`` priced with the model that answered (on
        the summary's provider, as extraction is); False when there were none."""
        memory = self.around.memory
        spent = [] if memory is None else memory.spent()
        provider = self.config.summary.provider or self.current.provider_name
        for model, usage in spent:
            state.charge(Call.priced("memory", model, provider, usage,
                                     self.current.price_of(model)))
        return bool(spent)

    def _write_summary(self, state: SessionState, summary: Summary) -> None:
        """The summary and the header's totals into the file (StoreError when it fails)."""
        if state.live is None or state.save_failed:
            return
        with sigint_deferred():
            self.around.store.finalize(
                state.live.session_id, summary, total_queries=state.queries,
                total_tokens=state.billed, context_tokens=self.engine.context.reported_size,
                cost=self.cost(state))

    def _save_summary(self, state: SessionState, summary: Summary) -> Flow:
        if state.live is None or state.save_failed:
            return
        try:
            self._write_summary(state, summary)
        except StoreError as exc:
            state.summary_failed = True
            yield Notice("error", f"could not write the summary: {exc}")
        else:
            yield Saved(state.live.session_id, state.live.file_name)

    # ------------------------------------------------------------------ the child
    def start_child(self, state: SessionState, parent: Parent,
                    quiet: bool = False) -> Generator[Event, None, SessionState]:
        """Start a child session of ``state``: the agent gets the restoration prompt (and the
        archive tool for the parent's transcript) and its acknowledgment becomes the first
        entry. The child's state (the session continues in it from its start, even when the
        restoration fails)."""
        chain = state.chain.plus(self.cost(state))  # the chain goes on (resume replaces it)
        # the title the user gave the parent goes on with the chain; one given here before
        # anything was saved names the session that takes its place
        title = parent.title or (state.title if state.live is None else None)
        state.close()
        child = SessionState(started=self.engine.settings.clock(), resumed_from=parent.session_id,
                             previous_session=parent.file_name, parent_summary=parent.summary,
                             forked=parent.forked, chain=chain, title=title,
                             cache_key=parent.cache_key or state.cache_key)
        readable = parent.session_id is not None and parent.file_name is not None
        self.around.continue_in(child, parent.session_id if readable else None)
        prompt = restoration_prompt(parent, archive_tool=readable)
        if not quiet:
            yield AnswerStarted(self.agent.name)
        signed = signed_to_send(parent.summary)[0]  # first, unless the summary changed since
        # Anthropic's compaction block holds the summary's own text: the prompt sent with it
        # does not repeat it (a Responses window is opaque: the readable summary still goes)
        once = signed is not None and signed.type == ANTHROPIC_COMPACTION
        restoring = self.engine.restore(summary_once(prompt) if once else prompt,
                                        () if signed is None else (signed,))
        answer: Answer = yield from (quietly(restoring) if quiet else restoring)
        context = restored_context(parent, automatic=quiet)
        # the prompt is kept in the child's file: it holds the parent's summary (see prune)
        turn = replace(answer.turn, context=context, previous_session=parent.file_name,
                       user=prompt)
        calls = self.priced("restoration", turn, answer.calls)
        if not quiet:
            yield TurnFinished(turn, None, cost_of(calls))
        child.restored = turn
        for call in calls:
            child.charge(call)
        return child

    def compact(self, state: SessionState, focus: str | None = None) -> Flow:
        """``compact``: summarize, save, continue in a child (nothing without a query)."""
        from rollchat.compaction.audit import audit, audit_line

        if state.queries == 0:
            yield Notice("info", "Nothing to compact yet: this session has no queries.")
            return
        yield CompactionStarted(f"compact{f' (focus: {focus})' if focus else ''}", False, 0,
                                self.budget.window)
        summary = yield from self.finalize(state, focus)
        assert summary is not None
        yield Notice("info", audit_line(audit(state.turns, summary, state.parent_summary)))
        yield saved_notice(state, self.around.store)
        yield Notice("info", "Starting new session with summary...")
        parent, before = state.as_parent(summary), self.estimate()
        yield from self.start_child(state, parent)
        self.reset()
        yield CompactionFinished(parent.session_id, False, 0, before, self.estimate())

    def before_sending(self, state: SessionState,
                       pending: Message) -> Generator[Event, None, bool]:
        """The plan before ``pending`` is sent: compact first (True when it did), or start a
        summary of the turns so far in the background."""
        decided, estimate = yield from self.plan(state, pending)
        yield Planned(estimate, self.budget.tokens, decided.compact, decided.reason)
        if decided.compact:
            compaction, hooks = self.auto_compact(state, decided, pending), self.around.hooks
            # the user's PreCompact and PostCompact around it (session/hooked.py)
            return (yield from hooks.automatic(state, compaction) if hooks else compaction)
        if decided.presummarize:
            self.summarizer.start_background(state.background, state.turns,
                                             state.parent_summary)
        return False

    def auto_compact(self, state: SessionState, decided: Plan,
                     pending: Message) -> Generator[Event, None, bool]:
        """Summarize and continue in a child session that keeps the last turns verbatim;
        False when the compaction failed.

        A compaction that leaves the next prompt still over the budget counts as a failure,
        so even a summary longer than what it replaced cannot make it compact every turn.
        """
        before = self.estimate([pending])
        yield CompactionStarted(decided.reason, True, before, self.budget.window)
        try:
            summary = yield from self.finalize(state, quick=True)
            assert summary is not None
            tail = self._kept_tail(state, decided, pending, summary)
            carried = carried_turns(state.turns, sum(1 for m in tail if m.role == "user"),
                                    state.session_id or UNSAVED)
            parent_id = state.session_id
            child = yield from self.start_child(state, state.as_parent(summary), quiet=True)
        except RollchatError as exc:
            yield from self._failed(exc)
            return False
        for message in unbound(tail, self.engine.model):
            self.engine.context.append(message)
        for turn in carried:
            child.add(turn)
        yield from self._measure_after(pending)
        yield CompactionFinished(parent_id, True, len(carried), before,
                                 self.guards.tokens_after_compaction)
        return True

    def _kept_tail(self, state: SessionState, decided: Plan, pending: Message,
                   summary: Summary) -> list[Message]:
        """The messages of the turns kept verbatim: with the summary written, its real size
        decides how many fit."""
        situation = self.situation(state, pending, summary)
        kept = policy.kept_turns(situation.tail, decided.keep_turns,
                                 situation.fixed_after + situation.pending, self.budget)
        context = self.engine.context
        return context.messages[tail_start(context.messages, context.prefix_len, kept):]

    def _failed(self, exc: RollchatError) -> Flow:
        failures = self.guards.consecutive_failures + 1
        self.guards = replace(self.guards, consecutive_failures=failures)
        yield Notice("warning", f"automatic compaction failed: {exc}")
        if failures >= policy.MAX_FAILURES:
            yield Notice("warning", f"automatic compaction failed {failures} times in a "
                                    "row; carrying on without it")

    def _measure_after(self, pending: Message) -> Flow:
        previous_failures = self.guards.consecutive_failures
        after = self.estimate([pending])
        self.guards = PolicyState(calls_since_compaction=0, tokens_after_compaction=after)
        if after > self.budget.tokens:
            self.guards = replace(self.guards, consecutive_failures=previous_failures + 1)
            yield Notice("warning", f"compaction left the context over budget ({after:,} of "
                                    f"{self.budget.tokens:,} tokens)")


THINKING_BLOCKS = ("thinking", "redacted_thinking")


def unbound(messages: Sequence[Message], model: str) -> list[Message]:
    """The kept tail of a compaction, as ``model`` may be sent it: a model whose thinking is
    bound to what precedes it refuses kept thinking once a summary replaces that (HTTP 400),
    so the kept turns go without their thinking ("remove thinking in kept turns":
    platform.claude.com "Prefix checks on thinking blocks"); the transcript keeps it.

    The same when the API wrote the summary (Anthropic's compaction): "Compaction and
    preserved thinking" (platform.claude.com, beta compact-2026-09-04) keeps kept thinking
    valid only while the compaction ran on a preserved-thinking model, the kept turns
    "immediately follow the summarized messages", sent unchanged, with no message skipped or
    added between the last summarized one and the first kept one, and ``system`` and
    ``tools`` are unchanged; otherwise the first request that sends it gets the 400 (or
    drops it with ``drop_block``). rollchat compacts the chat's whole request (the kept turns
    are inside what is summarized, not after it), and the child sends the restoration prompt
    and its acknowledgment between the compaction block and the kept turns: the conditions
    do not hold, so the docs' outcome is the refusal, and the thinking is removed here too."""
    if not binds_thinking(model):
        return list(messages)
    return [replace(m, extra=tuple(b for b in m.extra if b.type not in THINKING_BLOCKS))
            for m in messages]
