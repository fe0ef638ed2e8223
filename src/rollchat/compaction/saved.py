"""Summarizing a saved transcript: the ONE path that resuming a session with no summary
(compaction/unsummarized.py), ``rollchat compact ID`` and the MCP server (``compact`` here) and
``rollchat import`` take: the summary model chosen as the chat chooses it, and a large
transcript's cheap path (the model summarizes its newest part, the rest is summarized locally)."""

from __future__ import annotations

from collections.abc import Callable, Generator, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Protocol, TypeVar

from rollchat.compaction.cache import (
    CompactCache,
    Compacted,
    Method,
    cache_key,
    file_key,
    summary_markdown,
)
from rollchat.compaction.cache_entry import MAX_FOCUS_CHARS, MAX_WORDS, MIN_WORDS, arguments
from rollchat.compaction.choice import summary_choice, summary_names
from rollchat.domain import Summary, Transcript, Turn
from rollchat.errors import RollchatError, StoreError, TranscriptError
from rollchat.events import Event, Notice
from rollchat.storage.listing import SessionInfo
from rollchat.text.wording import human_tokens, plural

if TYPE_CHECKING:
    from rollchat.compaction.call import SummaryOutcome
    from rollchat.compaction.summarizer import Summarizer
    from rollchat.config.settings import Config, SummaryConfig
    from rollchat.providers.base import Provider
    from rollchat.storage.store import SessionStore

# (their homes are choice.py and cache_entry.py; callers import them from here too)
__all__ = ["MAX_FOCUS_CHARS", "MAX_WORDS", "MIN_WORDS", "summary_choice"]

T = TypeVar("T")
CONFIRM_CALLS = 5  # more summary calls than this: the cheap path, unless the user agrees
CHEAP_CALLS = 1  # the model calls of the cheap path (the newest part of the transcript)


@dataclass(frozen=True)
class SummaryModel:
    """The model that writes summaries, as the chat would use it: ``provider``, ``model``
    (the cache key names both) and the provider, built on first use only."""

    provider: str
    model: str
    config: SummaryConfig
    window: int
    max_output_tokens: int
    threshold: float
    safety_margin: int
    build: Callable[[], Provider]

    @property
    def key(self) -> str:
        return f"{self.provider}:{self.model}"

    def summarizer(self, words: int | None = None) -> Summarizer:
        """A summarizer with this model (built now), sized for its window; ``words``: the
        summary's size (default ``summary.max_words``)."""
        from rollchat.compaction import policy
        from rollchat.compaction.summarizer import Summarizer
        from rollchat.models.tokens import TokenCounter

        budget = policy.compute_budget(self.window, self.max_output_tokens, self.threshold,
                                       self.safety_margin)
        config = self.config if words is None else replace(self.config, max_words=words)
        return Summarizer(self.build(), model=self.model, config=config, budget=budget,
                          counter=TokenCounter(self.model))


def summary_model(cfg: Config, env: Mapping[str, str]) -> SummaryModel:
    """The summary model of ``cfg``'s agent, chosen as the chat chooses it (``summary_choice``);
    ConfigError when that provider cannot be used (no API key...). The chat's own provider is
    not needed (nor checked) when another one writes the summaries."""
    from rollchat import providers
    from rollchat.models.tokens import context_window

    agent = cfg.agent
    summary_name, model = summary_names(cfg, env)
    summary_agent = replace(agent, provider=summary_name, model=model)
    built: list[Provider] = []

    def build() -> Provider:
        if not built:
            built.append(providers.build_provider(summary_name, summary_agent, cfg, env))
        return built[0]

    return SummaryModel(summary_name, model, cfg.summary,
                        context_window(model, cfg.context_window_override(model)),
                        agent.max_output_tokens, cfg.session.compact_threshold,
                        cfg.session.safety_margin_tokens, build)



# ---------------------------------------------------------------- the path


@dataclass(frozen=True)
class SavedPlan:
    """How a saved transcript is summarized: ``chunks`` (one model request each, oldest
    first) and ``model_calls`` (None: every chunk by the model; else only that many of the
    newest, the older turns summarized locally). ``needed``: the calls all of it would take."""

    chunks: tuple[tuple[Turn, ...], ...]
    model_calls: int | None
    needed: int

    @property
    def cheap(self) -> bool:
        return self.model_calls is not None

    def describe(self) -> str:
        """What the cheap path does, in one sentence (no final period)."""
        from rollchat.compaction.summarizer import LOCAL_SAMPLE

        recent = sum(len(c) for c in self.chunks[-(self.model_calls or len(self.chunks)):])
        older = sum(len(c) for c in self.chunks) - recent
        read = (f" from their first {LOCAL_SAMPLE[0]} and last {LOCAL_SAMPLE[1]}"
                if older > sum(LOCAL_SAMPLE) else "")
        return (f"it would need {plural(self.needed, 'summary call')}: the model summarizes "
                f"its last {plural(recent, 'turn')} ({plural(CHEAP_CALLS, 'call')}); the "
                f"{older:,} before them are summarized locally{read}")


def plan_saved(summarizer: Summarizer, turns: list[Turn],
               ask: Callable[[str], bool] | None = None) -> SavedPlan:
    """The plan for ``turns``: all by the model when it takes at most CONFIRM_CALLS calls, or
    when ``ask`` (given the estimate) agrees; else the cheap path, its chunks grouped from the
    newest turn so that the part the model summarizes is as full as one request allows."""
    with summarizer.counter.remembering():  # a huge answer sized, then cut: encoded once
        return _plan_saved(summarizer, turns, ask)


def _plan_saved(summarizer: Summarizer, turns: list[Turn],
                ask: Callable[[str], bool] | None) -> SavedPlan:
    from rollchat.compaction.chunks import turn_tokens
    from rollchat.compaction.summarizer import SUMMARY_PROMPT_OVERHEAD

    # each turn counted once for both plans (tiktoken is the slow part of a large one)
    sizes = {id(t): turn_tokens(summarizer.counter, t) for t in turns}

    def sized(turn: Turn) -> int:
        return sizes[id(turn)]

    chunks = summarizer.plan(turns, sized)
    whole = SavedPlan(tuple(tuple(c) for c in chunks), None, len(chunks))
    if len(chunks) <= CONFIRM_CALLS:
        return whole
    if ask is not None:
        tokens = (sum(sizes.values())
                  + len(chunks) * (SUMMARY_PROMPT_OVERHEAD + summarizer.words * 2))
        if ask(f"Summarizing its {len(turns):,} turns with {summarizer.model} takes "
               f"{len(chunks):,} model calls (about {human_tokens(tokens)} tokens sent); "
               "answering no has the model summarize only the last part and the rest is "
               "summarized locally. Continue? (y/n) "):
            return whole
    newest = [tuple(c[::-1]) for c in summarizer.plan(turns[::-1], sized)[::-1]]
    return SavedPlan(tuple(newest), CHEAP_CALLS, len(chunks))


class SummaryFlow(Protocol):
    """The chat's summary flow (Session): the summary, announced and shown as events;
    returns (outcome, interrupted)."""

    def __call__(self, turns: list[Turn], parent: Summary | None, focus: str | None, *,
                 chunks: list[list[Turn]] | None = None, model_calls: int | None = None,
                 ) -> Generator[Event, None, tuple[SummaryOutcome, bool]]: ...


@dataclass(frozen=True)
class SavedSummary:
    """What ``summarize_saved`` gives: the outcome, the plan it followed, and whether a
    Ctrl-C came while the summary was shown (the caller saves it, then stops)."""

    outcome: SummaryOutcome
    plan: SavedPlan
    interrupted: bool = False


def summarize_saved(summarizer: Summarizer, turns: list[Turn], parent: Summary | None,
                    focus: str | None = None, *, ask: Callable[[str], bool] | None = None,
                    summarize: SummaryFlow | None = None,
                    ) -> Generator[Event, None, SavedSummary]:
    """THE summary of a saved transcript's ``turns`` (``parent``: the summary its session
    started from): planned by ``plan_saved`` (``ask`` None: nobody is asked, a large one takes
    the cheap path), a Notice when the cheap path is taken, then written by ``summarize`` (the
    chat's summary flow, with its events) or, without one, by ``summarizer`` directly."""
    plan = plan_saved(summarizer, turns, ask)
    if plan.cheap:
        said = plan.describe()
        yield Notice("info", said[0].upper() + said[1:] + ".")
    chunks = [list(c) for c in plan.chunks]
    if summarize is None:
        outcome = summarizer.summarize(turns, parent, focus, chunks=chunks,
                                       model_calls=plan.model_calls)
        return SavedSummary(outcome, plan)
    outcome, stop = yield from summarize(turns, parent, focus, chunks=chunks,
                                    model_calls=plan.model_calls)
    return SavedSummary(outcome, plan, stop)


def settled(flow: Generator[Event, None, T]) -> T:
    """Run a flow that nobody watches (``compact``, ``import``) to its end: its result."""
    while True:
        try:
            next(flow)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]


def title_of(info: SessionInfo) -> str | None:
    """A session's title: its header's Title field (given by the user or written by the model
    with the summary), else its first query's first line; None before any query."""
    return info.title or None


# ---------------------------------------------------------------- the operation


def compact(store: SessionStore, ref: str, model: SummaryModel, *, focus: str | None = None,
            max_words: int | None = None, refresh: bool = False) -> Compacted:
    """The summary of session ``ref`` (a number, an id or a unique part of one). Writes no
    session file: only the cache entry of a summary the model wrote. RollchatError for an
    unknown or unreadable session, one with no queries, or a bad ``focus``/``max_words``."""
    focus, max_words = arguments(focus, max_words)
    info = store.resolve(ref)  # through the index, as resume: no full listing read
    data = store.read_bytes(info.session_id)
    cache = CompactCache(store.root)
    own = focus is None and max_words is None and not refresh  # the file's summary will do
    if own and (hit := cache.get(file_key(data, model.model))) is not None:
        return hit  # (the tokenizer is the slow part of an answer from the file's summary)
    title = title_of(info)
    transcript = _parsed(data, info) if own else None
    if transcript is not None and transcript.summary is not None:
        result = _done(info, title, transcript.summary, "file", None, None, None, cached=True,
                       counter=model.model)
        problem = cache.put(file_key(data, model.model), result)
        return replace(result, notes=(problem,)) if problem is not None else result
    notes: list[str] = []
    parent = _parent_summary(store, info, notes)
    words = max_words if max_words is not None else model.config.max_words
    key = cache_key(data, parent, focus, words, model.key)
    if not refresh:  # (an entry is keyed by the file's bytes: they were parsed when written)
        hit = cache.get(key)
        if hit is not None:
            return replace(hit, title=title, cached=True, notes=tuple(notes))
    turns = [t for t in (transcript or _parsed(data, info)).turns if t.kind != "restored"]
    if not any(t.kind in ("query", "carried") for t in turns):
        raise RollchatError(f"session {info.session_id} has no queries to summarize")
    saved = settled(summarize_saved(model.summarizer(words), turns, parent, focus))
    outcome = saved.outcome
    if saved.plan.cheap:  # nobody is asked: a client's one call must not cost dozens
        notes.append(saved.plan.describe())
    method: Method = "extractive" if outcome.fallback_used else "model"
    result = _done(info, title, outcome.summary, method, model, focus, words,
                   reason=outcome.reason, cached=False, counter=model.model)
    if method == "model":  # a failed model call is not remembered: the next one tries again
        problem = cache.put(key, result)
        if problem is not None:
            notes.append(problem)
    return replace(result, notes=tuple(notes))


def _parsed(data: bytes, info: SessionInfo) -> Transcript:
    from rollchat.storage.transcript import decode, parse_lenient

    try:
        return parse_lenient(decode(data, binary_check=False))
    except TranscriptError as e:
        raise StoreError(f"{info.file_name}: {e}") from None


def _parent_summary(store: SessionStore, info: SessionInfo,
                    notes: list[str]) -> Summary | None:
    """The parent's summary (the chain's context a compaction carries), or None."""
    if info.resumed_from is None:
        return None
    parent = next((s for s in store.lineage([info])
                   if s.session_id == info.resumed_from), None)
    if parent is None:
        notes.append(f"its parent {info.resumed_from} is missing: summarized without the "
                     "parent's summary")
        return None
    try:
        summary = store.load_summary(parent)
    except StoreError as e:
        notes.append(f"its parent's summary cannot be read ({e}): summarized without it")
        return None
    if summary is None:
        notes.append(f"its parent {parent.session_id} has no summary: summarized without it")
    return summary


def _done(info: SessionInfo, title: str | None, summary: Summary, method: Method,
          model: SummaryModel | None, focus: str | None, max_words: int | None,
          reason: str | None = None, *, cached: bool, counter: str) -> Compacted:
    """The result; ``counter``: the model whose tokenizer counts its tokens."""
    from rollchat.models.tokens import TokenCounter

    markdown = summary_markdown(summary)
    tokens = TokenCounter(counter).count_text(markdown)
    return Compacted(info.session_id, title, summary, markdown, tokens, cached, method,
                     model.key if model is not None else None, focus, max_words,
                     info.resumed_from, reason)
