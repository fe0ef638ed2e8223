"""Writing a session's summary: the model call (timeout, one retry, local fallback), chunks
when the conversation does not fit one request, bounded in tokens, and partly in the background.

From ~70% of the budget the turns so far are summarized in a background thread, each later run
of turns folded into the previous summary, so a compaction at the threshold only has the few
turns since to add.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from rollchat.compaction.call import NOT_ASKED, SummaryOutcome, summarize
from rollchat.compaction.carry import merge_summaries
from rollchat.compaction.chunks import chunk_turns, turn_tokens
from rollchat.compaction.engine import choose_engine
from rollchat.compaction.server import server_summary
from rollchat.config.compaction import PROVIDER, ROLLCHAT, Engine
from rollchat.domain import Summary, Turn, Usage
from rollchat.interrupts import join, result, sigint_deferred, start_worker
from rollchat.providers.base import (
    ChatRequest,
    ContextTooLongError,
    Provider,
)
from rollchat.providers.compacting import CompactingProvider
from rollchat.storage.transcript import render_summary_block

if TYPE_CHECKING:
    from collections.abc import Callable
    from concurrent.futures import Future

    from rollchat.compaction.policy import Budget
    from rollchat.config.settings import SummaryConfig
    from rollchat.models.current import CurrentModel
    from rollchat.models.tokens import TokenCounter

SUMMARY_PROMPT_OVERHEAD = 1_500  # tokens of the summary prompt's own instructions
QUICK_REST_TURNS = 4  # at most this many turns after the background summaries: no model call
MIN_WORDS = 20
# the older turns of a cheap summary that the local summarizer reads: the first and the last
# ones (what its bounded lists keep: earliest decisions, latest topics and to-dos)
LOCAL_SAMPLE = (100, 400)
MAX_SHRINKS = 4  # smaller windows learned within one summary before giving up on the model


@dataclass
class Background:
    """One session's background summaries: consecutive runs (start, end, summary) of turns."""

    runs: list[tuple[int, int, Future[SummaryOutcome]]] = field(default_factory=list)


class Summarizer:
    """Summaries with one provider, sized for one context budget."""

    def __init__(self, provider: Provider, *, model: str, config: SummaryConfig,
                 budget: Budget, counter: TokenCounter,
                 follows: CurrentModel | None = None,
                 engine: Engine = ROLLCHAT) -> None:
        self.provider = provider
        self.choice = choose_engine(engine, provider)  # compaction.engine, for this provider
        self.notes: list[str] = []  # lines for the user about the engine, taken as said
        self._model = model
        # the chat's model when summaries use it: its name (``model NAME`` included) and its
        # window learner, asked at each summary (None: summaries have a model of their own)
        self.follows = follows
        self.config = config
        self.budget = budget
        self.counter = counter
        self.words = 0
        self.resize(budget)
        self.skipped: str | None = None  # why the model is not asked (see ``skip_model``)

    def resize(self, budget: Budget) -> None:
        """Use ``budget`` from now on (a smaller window was learned)."""
        self.budget = budget
        # A summary must leave room for work: small windows get shorter summaries.
        self.words = min(self.config.max_words, max(60, budget.tokens // 6))

    @property
    def model(self) -> str:
        """The model summaries are asked of: the chat's current one when they follow it."""
        return self._model if self.follows is None else self.follows.name

    def skip_model(self, provider: Provider, why: str) -> None:
        """The summaries from now on are local when ``provider`` is this summarizer's: it
        failed in a way that asking it again cannot mend (nothing listens at its server)."""
        if provider is self.provider:
            self.skipped = f"{NOT_ASKED}{why}"

    def _call(self, turns: list[Turn], parent: Summary | None,
              focus: str | None, prefix: ChatRequest | None = None) -> SummaryOutcome:
        if self.choice.note is not None:  # said once, at the first summary
            self.notes.append(self.choice.note)
            self.choice = replace(self.choice, note=None)
        if prefix is None or self.choice.engine != PROVIDER or \
                not isinstance(self.provider, CompactingProvider):
            return self._rollchat(turns, parent, focus, prefix)
        server = server_summary(self.provider, prefix, parent=parent, focus=focus,
                                max_words=self.words,
                                max_output_tokens=self.budget.max_output_tokens,
                                fill=lambda: self._local(turns, parent, focus, self.words,
                                                         fallback=False))
        if server.summary is not None:
            return SummaryOutcome(server.summary, False, None, server.usage)
        self.notes.append(f"The provider's compaction failed ({server.reason}); rollchat "
                          "wrote the summary instead.")
        outcome = self._rollchat(turns, parent, focus, prefix)
        return replace(outcome, usage=outcome.usage + server.usage)

    def take_notes(self) -> list[str]:
        """The lines about the engine not said yet (see ``notes``)."""
        notes, self.notes = self.notes, []
        return notes

    def _rollchat(self, turns: list[Turn], parent: Summary | None, focus: str | None,
                  prefix: ChatRequest | None) -> SummaryOutcome:
        return summarize(self.provider, turns, parent_summary=parent, focus=focus,
                         model=self.model, max_words=self.words,
                         timeout_seconds=self.config.timeout_seconds,
                         max_output_tokens=self.budget.max_output_tokens, prefix=prefix,
                         room=self.output_room)

    def output_room(self, request: ChatRequest) -> int:
        """The output tokens the window leaves beside ``request``, its prompt counted now
        (tools, system prompt and messages), the safety margin kept."""
        sent = self.counter.count_messages(request.system, request.messages, request.tools)
        return self.budget.window - self.budget.safety_margin - sent

    def _local(self, turns: list[Turn], parent: Summary | None, focus: str | None,
               words: int, fallback: bool = True) -> Summary:
        from rollchat.compaction.extractive import extractive_summary

        return extractive_summary(turns, parent_summary=parent, focus=focus, max_words=words,
                                  fallback=fallback)

    # ------------------------------------------------------------------ the summary
    def summarize(self, turns: list[Turn], parent: Summary | None, focus: str | None, *,
                  background: Background | None = None, quick: bool = False,
                  chunks: list[list[Turn]] | None = None, model_calls: int | None = None,
                  within: float | None = None, prefix: ChatRequest | None = None,
                  local: bool = False) -> SummaryOutcome:
        """The summary of ``turns`` (``parent``: the parent session's summary). Never draws:
        the caller tells the user (the outcome says whether the local fallback was used, why).

        ``background``: the session's background summaries, used for the turns they cover.
        ``quick`` (automatic compaction): when only a few turns follow them, those are
        summarized locally, so compacting at the threshold does not make the user wait (they
        are also carried verbatim into the new session). Ctrl-C falls back to a local summary.
        ``chunks``: ``plan(turns)``, already measured. ``model_calls``: only the last chunks
        go to the model; the older turns get one local summary (of their first and last
        LOCAL_SAMPLE turns), which the model's continues. ``within`` seconds (the chat ends
        on a signal): the local summary if the model's has not come by then. ``prefix``: the
        chat's next request without a new message, when it holds all of ``turns`` and leaves
        room for the summary: one request reusing it summarizes them (when no background
        summary covers some of them and no part was measured or chosen already; refused as
        too long, the turns go the separate way). ``local``: the local summary, asked for (a
        one-shot run's, see ``summary.one_shot``): no model call.
        """
        if local:
            return self.local(turns, parent, focus)
        if self.skipped is not None:
            return SummaryOutcome(self._local(turns, parent, focus, self.words), True,
                                  self.skipped)
        if within is not None:
            return self.within(within, turns, parent, focus, background=background,
                               chunks=chunks, model_calls=model_calls)
        try:
            outcomes, running, rest = self._from_runs(turns, parent, focus, background, quick)
            if prefix is not None and not outcomes and chunks is None and model_calls is None:
                outcome = self._call(rest, running, focus, prefix)
                if outcome.refused is None and not outcome.no_room:
                    return self._merged([self.fit(outcome, rest, running, focus)], turns,
                                        parent, focus)
                if outcome.refused is not None:  # the window it taught sizes the parts
                    self._shrink(outcome.refused, rest)
            todo = chunks if chunks is not None else self._chunks(rest, running)
            if model_calls is not None and len(todo) > model_calls:
                running = self._older_locally(todo[:len(todo) - model_calls], running, focus)
                outcomes.append(SummaryOutcome(running, False, None, Usage()))
                todo = todo[len(todo) - model_calls:]
            outcomes += self._by_model(list(todo), running, focus)
        except KeyboardInterrupt:
            outcomes = [self.interrupted(turns, parent, focus)]
        return self._merged(outcomes, turns, parent, focus)

    def _from_runs(self, turns: list[Turn], parent: Summary | None, focus: str | None,
                   background: Background | None, quick: bool,
                   ) -> tuple[list[SummaryOutcome], Summary | None, list[Turn]]:
        """The background summaries that can be used, the running summary after them and the
        turns they leave; ``quick``: a few turns left are summarized locally too."""
        done, covered = self._from_background(background, focus)
        if not done:
            return [], parent, turns
        outcomes = [self.fit(o, turns[:covered], parent, focus) for o in done]
        running, rest = outcomes[-1].summary, turns[covered:]
        if quick and len(rest) <= QUICK_REST_TURNS:
            local = self._local(rest, running, None, self.words, fallback=False)
            outcomes.append(SummaryOutcome(local, False, None, Usage()))
            rest = []
        return outcomes, running, rest

    def _older_locally(self, chunks: list[list[Turn]], running: Summary | None,
                       focus: str | None) -> Summary:
        """The local summary (labelled local) of the older chunks the model does not get: of
        their first and last LOCAL_SAMPLE turns, a bounded pass whatever the size."""
        older = [t for c in chunks for t in c]
        if len(older) > sum(LOCAL_SAMPLE):
            older = older[:LOCAL_SAMPLE[0]] + older[-LOCAL_SAMPLE[1]:]
        return self._local(older, running, focus, self.words)

    def _by_model(self, todo: list[list[Turn]], running: Summary | None,
                  focus: str | None, learn: bool = True) -> list[SummaryOutcome]:
        """One model call per chunk, each continuing the summary before it; a request refused
        as too long (see ``_shrink``), or one not sent because the window left its reply no
        room, has the rest cut again into smaller chunks (``learn``: a refusal may teach the
        chat's model a smaller window; not from the background)."""
        outcomes: list[SummaryOutcome] = []
        shrinks = 0
        while todo:
            chunk = todo.pop(0)
            outcome = self._call(chunk, running, focus)
            if shrinks < MAX_SHRINKS and (outcome.no_room or (
                    learn and outcome.refused is not None and self._shrink(outcome.refused,
                                                                           chunk))):
                shrinks += 1  # a smaller window, or none left for the reply: the rest again,
                size = sum(turn_tokens(self.counter, t) for t in chunk)  # in smaller chunks,
                cap = min(size - outcome.no_room, size // 2) if outcome.no_room else size - 1
                todo = self._chunks([t for c in (chunk, *todo) for t in c], running,
                                    cap=cap)  # the first one smaller than the one not sent
                continue
            outcome = self.fit(outcome, chunk, running, focus)
            outcomes.append(outcome)
            running = outcome.summary
        return outcomes

    def _merged(self, outcomes: list[SummaryOutcome], turns: list[Turn],
                parent: Summary | None, focus: str | None) -> SummaryOutcome:
        """The outcomes of the parts as one (empty ones left out), fitted to the budget."""
        failed = [o for o in outcomes if o.fallback_used]
        outcomes = [o for o in outcomes if o.summary.topics or o.summary.decisions
                    or o.summary.pending] or outcomes[:1]
        if len(outcomes) == 1:
            return outcomes[0]
        merged = merge_summaries([o.summary for o in outcomes], self.words, turns)
        usage = sum((o.usage for o in outcomes), Usage())
        reason = failed[0].reason if failed else None
        return self.fit(SummaryOutcome(merged, bool(failed), reason, usage), turns, parent,
                        focus)

    def within(self, seconds: float, turns: list[Turn], parent: Summary | None,
               focus: str | None, *, background: Background | None = None,
               chunks: list[list[Turn]] | None = None, model_calls: int | None = None,
               ) -> SummaryOutcome:
        """``summarize``, if the model's summary comes within ``seconds`` (the chat is ending
        on a signal: a shutdown will not wait long); else the local summary."""
        done: list[SummaryOutcome] = []
        worker = threading.Thread(  # a daemon: a call that hangs must not hold the exit
            target=lambda: done.append(self.summarize(turns, parent, focus,
                                                      background=background, chunks=chunks,
                                                      model_calls=model_calls)),
            name="rollchat-summary", daemon=True)
        start_worker(worker)
        join(worker, seconds)
        if done:
            return done[0]
        return SummaryOutcome(self._local(turns, parent, focus, self.words), True,
                              f"no summary from the model within {seconds:g}s", Usage())

    def _shrink(self, error: ContextTooLongError, chunk: list[Turn]) -> bool:
        """A summary request for ``chunk`` was refused as too long: True when a smaller
        window was learned (the chunks are then cut again), False to fall back locally."""
        if self.follows is None:  # another model's window: nothing of the chat's to learn
            return False
        sent = SUMMARY_PROMPT_OVERHEAD + sum(turn_tokens(self.counter, t) for t in chunk)
        return self.follows.summary_refused(error, sent)

    def local(self, turns: list[Turn], parent: Summary | None,
              focus: str | None) -> SummaryOutcome:
        """The local summary, asked for (``summary.one_shot: local``): no model call."""
        return SummaryOutcome(self._local(turns, parent, focus, self.words, fallback=False),
                              False, None, Usage())

    def interrupted(self, turns: list[Turn], parent: Summary | None, focus: str | None,
                    ) -> SummaryOutcome:
        """The local summary after a Ctrl-C; a second Ctrl-C is held until it is written."""
        with sigint_deferred(deliver=False):
            return SummaryOutcome(self._local(turns, parent, focus, self.words), True,
                                  "interrupted", Usage())

    def plan(self, turns: list[Turn], sized: Callable[[Turn], int] | None = None,
             ) -> list[list[Turn]]:
        """The summary requests ``turns`` need: groups of turns, one request each. ``sized``:
        a turn's ``turn_tokens``, remembered by the caller (default: counted here)."""
        return self._chunks(turns, None, sized=sized)

    def _chunks(self, turns: list[Turn], running: Summary | None,
                cap: int | None = None, sized: Callable[[Turn], int] | None = None,
                ) -> list[list[Turn]]:
        """``turns`` in groups that each fit one summary request (usually one group), each at
        most ``cap`` tokens when given."""
        if not turns:
            return []
        if sized is None:  # each turn counted once (tiktoken is the slow part)
            sizes = {id(t): turn_tokens(self.counter, t) for t in turns}
            sized = lambda turn: sizes[id(turn)]  # noqa: E731
        limit = self.budget.window - self.budget.max_output_tokens - SUMMARY_PROMPT_OVERHEAD
        total = sum(sized(t) for t in turns)
        if running is not None or total > max(limit, 500):  # room for the (running) summary
            limit -= self.words * 2
        limit = max(limit, min(500, self._room(running))) if cap is None else \
            max(min(limit, cap), 1)
        return chunk_turns(turns, limit, self.counter, sized) if total > limit else [turns]

    def _room(self, running: Summary | None) -> int:
        """The most tokens of turns one summary request may carry so that the request and its
        reply fit the window (a small one: the 500-token floor would overflow it): the window
        less the margin, the reply's output limit and the request's own text (its
        instructions, the running summary) with half that again for the turns' JSON form."""
        from rollchat.compaction.request import build_summary_request, reply_tokens

        empty = build_summary_request([], parent_summary=running, focus=None, model=self.model,
                                      max_words=self.words, max_output_tokens=1)
        fixed = self.counter.count_text(empty.system) + self.counter.count_text(
            empty.messages[0].content)
        reply = reply_tokens(self.words, running, self.budget.max_output_tokens)
        room = self.budget.window - self.budget.safety_margin - reply - fixed
        return max(room * 2 // 3, 1)

    def fit(self, outcome: SummaryOutcome, turns: list[Turn], parent: Summary | None,
            focus: str | None) -> SummaryOutcome:
        """A summary bounded in words can still be too many tokens (ids, hashes, paths): one
        over a third of the budget is replaced by a shorter local summary."""
        cap = self.budget.tokens // 3
        if self.counter.count_text(render_summary_block(outcome.summary)) <= cap:
            return outcome
        words = max(min(self.words, cap // 2), MIN_WORDS)
        while True:
            summary = self._local(turns, parent, focus, words)
            if words <= MIN_WORDS or self.counter.count_text(
                    render_summary_block(summary)) <= cap:
                break
            words = max(words // 2, MIN_WORDS)
        return SummaryOutcome(summary, True, "the summary was too long for the context window",
                              outcome.usage)

    # ------------------------------------------------------------------ background
    def start_background(self, background: Background, turns: list[Turn],
                         parent: Summary | None) -> None:
        """Summarize the turns no run covers yet in a background thread, folded into the
        previous run's summary, once that one is done and enough turns have come; never with
        the provider's compaction (``compaction.engine: provider`` on a provider that has it)."""
        from concurrent.futures import Future

        if self.choice.engine == PROVIDER:  # the provider's compaction reads the chat's own
            return  # cached request at the compaction: one ahead would send every turn again,
            # uncached, and its summary would be used instead of the provider's
        runs = background.runs
        begin = runs[-1][1] if runs else 0
        if runs and not runs[-1][2].done():
            return
        if len(turns) - begin <= (QUICK_REST_TURNS if begin else 0):
            return
        if runs:
            try:
                previous = runs[-1][2].result(timeout=0)
            except Exception:
                return  # a failed background summary: compaction summarizes everything
            if previous.fallback_used:
                return
            parent = self.fit(previous, turns[runs[-1][0]:begin], parent, None).summary
        todo = turns[begin:]
        future: Future[SummaryOutcome] = Future()

        def run() -> None:
            try:  # in parts that each fit a summary request with room for its reply
                outcomes = self._by_model(self._chunks(todo, parent), parent, None, learn=False)
                future.set_result(self._merged(outcomes, todo, parent, None))
            except BaseException as exc:  # not usable: compaction summarizes those turns
                future.set_exception(exc)

        runs.append((begin, len(turns), future))
        start_worker(threading.Thread(target=run, name="rollchat-presummary", daemon=True))

    def _from_background(self, background: Background | None, focus: str | None,
                         ) -> tuple[list[SummaryOutcome], int]:
        """The background summaries that can be used (waiting for one still running, in
        slices: a Ctrl-C is seen within one), and how many turns they cover; ([], 0) when
        there are none (or a focus was asked for)."""
        if background is None or not background.runs or focus is not None:
            return [], 0
        outcomes: list[SummaryOutcome] = []
        end = 0
        for _begin, stop, future in background.runs:
            try:
                outcome = result(future, self.config.timeout_seconds)
            except Exception:
                break
            if outcome.fallback_used:
                break
            outcomes.append(outcome)
            end = stop
        return outcomes, end
