"""Compaction as an operation: the summary of any saved session, with its parent's summary
carried as a real compaction carries it, changing no session file. Results are cached in
``<sessions dir>/.cache/compact/``, keyed by the file's bytes, the parent's summary, focus,
size and model. ``rollchat compact`` and the MCP server's ``compact_session`` use it; no
terminal code here."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from rollchat.domain import Summary, Transcript, Turn
from rollchat.errors import RollchatError, StoreError, TranscriptError
from rollchat.storage.listing import SessionInfo
from rollchat.storage.session_file import NOFOLLOW, atomic_write

if TYPE_CHECKING:
    from rollchat.compaction.summarizer import SummaryOutcome
    from rollchat.config.settings import Config, SummaryConfig
    from rollchat.providers.base import Provider
    from rollchat.storage.store import SessionStore

Method = Literal["file", "model", "extractive"]
CACHE_DIR = Path(".cache") / "compact"  # inside the sessions directory (listing skips dot names)
CACHE_VERSION = 1  # part of every key: a change of format makes old entries unreachable
CACHE_ENTRY_MAX_BYTES = 1024 * 1024  # a larger entry is not read (it is not one of ours)
CACHE_MAX_ENTRIES = 500  # past this, the oldest entries are removed when one is written
MIN_WORDS = 20  # the smallest --max-words accepted


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


def summary_model(cfg: Config, env: Mapping[str, str]) -> SummaryModel:
    """The summary model of ``cfg``'s agent, chosen as the chat chooses it (``summary.provider``
    / ``summary.model``, else the chat's provider and model); ConfigError when its provider
    cannot be used (no API key...)."""
    from rollchat import providers
    from rollchat.models.tokens import context_window

    agent = cfg.agent
    name, _reason = providers.resolve_provider_name(agent, env)
    providers.check_provider(name, agent, env)
    summary_name = cfg.summary.provider or name
    providers.check_provider(summary_name, agent, env)
    model = cfg.summary.model or agent.model or providers.DEFAULT_MODELS[name]
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


@dataclass(frozen=True)
class Compacted:
    """The summary of one session and where it came from: ``method`` "file" (the session's
    own summary block), "model", or "extractive" (the model failed: ``reason`` says why);
    ``cached`` when no summary was written for this answer (the cache, or the file's block).
    ``tokens``: the tokens of ``markdown``, what handing the summary on costs."""

    session_id: str
    title: str | None
    summary: Summary
    markdown: str
    tokens: int
    cached: bool
    method: Method
    model: str | None  # "provider:model" that wrote it; None for the file's own block
    focus: str | None
    max_words: int | None  # the size asked of the model (None: the file's own block)
    parent: str | None
    reason: str | None = None
    notes: tuple[str, ...] = ()  # what did not stop it (an unreadable parent, a cache error)

    def as_json(self) -> dict[str, Any]:
        """What ``compact --json`` prints and ``compact_session`` returns."""
        s = self.summary
        return {"session": self.session_id, "title": self.title, "summary": self.markdown,
                "background": s.background, "topics": list(s.topics),
                "decisions": list(s.decisions), "pending": list(s.pending),
                "files": list(s.artifacts), "tokens": self.tokens, "cached": self.cached,
                "method": self.method, "model": self.model, "focus": self.focus,
                "max_words": self.max_words, "parent": self.parent,
                "fallback_reason": self.reason, "notes": list(self.notes)}


def summary_markdown(s: Summary) -> str:
    """The summary as markdown: the sections of the file's summary block, without its markers
    or its escapes (a consumer reads it, not the parser)."""
    def bullets(items: tuple[str, ...]) -> list[str]:
        return [("- " + item).replace("\n", "\n  ") for item in items] or ["- None"]

    lines = [f"**Background Context:** {s.background}", ""]
    sections = [("Topics Discussed", s.topics), ("Decisions Made", s.decisions),
                ("Pending", s.pending)]
    if s.artifacts:
        sections.append(("Files and artifacts", s.artifacts))
    for title, items in sections:
        lines += [f"**{title}:**", *bullets(items), ""]
    return "\n".join(lines).rstrip("\n") + "\n"


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
    from rollchat.text.normalize import clean

    if focus is not None:
        focus = clean(focus).strip()
        if not focus:
            raise RollchatError("the focus is empty: give some text, or leave it out")
    if max_words is not None and max_words < MIN_WORDS:
        raise RollchatError(f"max words must be at least {MIN_WORDS} (got {max_words})")
    info = store.index.resolve(ref)  # through the index, as resume: no full listing read
    transcript, data = _read(store, info)
    title = title_of(info)
    if transcript.summary is not None and focus is None and max_words is None and not refresh:
        return _done(info, title, transcript.summary, "file", None, None, None, cached=True,
                     counter=model.model)
    turns = [t for t in transcript.turns if t.kind != "restored"]
    if not any(t.kind in ("query", "carried") for t in turns):
        raise RollchatError(f"session {info.session_id} has no queries to summarize")
    notes: list[str] = []
    parent = _parent_summary(store, info, notes)
    words = max_words if max_words is not None else model.config.max_words
    cache = CompactCache(store.root)
    key = cache_key(data, parent, focus, words, model.key)
    if not refresh:
        hit = cache.get(key)
        if hit is not None:
            return replace(hit, title=title, cached=True, notes=tuple(notes))
    outcome = _summarize(model, turns, parent, focus, words, notes)
    method: Method = "extractive" if outcome.fallback_used else "model"
    result = _done(info, title, outcome.summary, method, model, focus, words,
                   reason=outcome.reason, cached=False, counter=model.model)
    if method == "model":  # a failed model call is not remembered: the next one tries again
        problem = cache.put(key, result)
        if problem is not None:
            notes.append(problem)
    return replace(result, notes=tuple(notes))


def _read(store: SessionStore, info: SessionInfo) -> tuple[Transcript, bytes]:
    from rollchat.storage.transcript import decode, parse_lenient

    data = store.read_bytes(info.session_id)
    try:
        return parse_lenient(decode(data, binary_check=False)), data
    except TranscriptError as e:
        raise StoreError(f"{info.file_name}: {e}") from None


def _parent_summary(store: SessionStore, info: SessionInfo,
                    notes: list[str]) -> Summary | None:
    """The parent's summary (the chain's context a compaction carries), or None."""
    if info.resumed_from is None:
        return None
    parent = next((s for s in store.index.lineage([info])
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


def _summarize(model: SummaryModel, turns: list[Turn], parent: Summary | None,
               focus: str | None, words: int, notes: list[str]) -> SummaryOutcome:
    """The summary; a session needing more than CONFIRM_CALLS model calls gets CHEAP_CALLS of
    them (its last part) and a local summary of the rest, as ``import`` does: nobody is asked
    here, and a client's one tool call must not cost dozens of requests."""
    from rollchat.compaction import policy
    from rollchat.compaction.summarizer import Summarizer
    from rollchat.models.tokens import TokenCounter
    from rollchat.session.unsummarized import CHEAP_CALLS, CONFIRM_CALLS
    from rollchat.text.wording import plural

    budget = policy.compute_budget(model.window, model.max_output_tokens, model.threshold,
                                   model.safety_margin)
    summarizer = Summarizer(model.build(), model=model.model,
                            config=replace(model.config, max_words=words), budget=budget,
                            counter=TokenCounter(model.model))
    chunks = summarizer.plan(turns)
    if len(chunks) <= CONFIRM_CALLS:
        return summarizer.summarize(turns, parent, focus, chunks=chunks)
    notes.append(f"the session would need {plural(len(chunks), 'summary call')}: the model "
                 f"summarized its last part ({plural(CHEAP_CALLS, 'call')}), the older turns "
                 "were summarized locally")
    return summarizer.summarize(turns, parent, focus, chunks=chunks, model_calls=CHEAP_CALLS)


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


# ---------------------------------------------------------------- the cache


def cache_key(data: bytes, parent: Summary | None, focus: str | None, max_words: int,
              model: str) -> str:
    """The cache key of a summary: the session file's bytes, the parent's summary it carries,
    the focus, the size in words and the model."""
    from rollchat.storage.transcript import render_summary_block

    parts = [CACHE_VERSION, hashlib.sha256(data).hexdigest(),
             render_summary_block(parent) if parent is not None else None, focus, max_words,
             model]
    return hashlib.sha256(json.dumps(parts, ensure_ascii=True).encode()).hexdigest()


class CompactCache:
    """``<sessions dir>/.cache/compact/<key>.json``: one summary per key, written atomically;
    an entry that is not a valid one of ours is ignored (and replaced when recomputed)."""

    def __init__(self, sessions_dir: Path) -> None:
        self.dir = sessions_dir / CACHE_DIR

    def path(self, key: str) -> Path:
        return self.dir / f"{key}.json"

    def get(self, key: str) -> Compacted | None:
        try:
            fd = os.open(self.path(key), os.O_RDONLY | NOFOLLOW)
        except OSError:
            return None
        with os.fdopen(fd, "rb") as f:
            raw = f.read(CACHE_ENTRY_MAX_BYTES + 1)
        if len(raw) > CACHE_ENTRY_MAX_BYTES:
            return None
        try:
            entry = json.loads(raw.decode("utf-8"))
            return _from_entry(entry, key)
        except (ValueError, TypeError, KeyError):
            return None

    def put(self, key: str, result: Compacted) -> str | None:
        """Write the entry; None, or why it could not be written (not fatal: it is a cache)."""
        entry = {"version": CACHE_VERSION, "key": key, "result": result.as_json()}
        data = json.dumps(entry, ensure_ascii=False, indent=1).encode("utf-8", "surrogatepass")
        try:
            self.dir.mkdir(parents=True, exist_ok=True, mode=0o700)
            atomic_write(self.path(key), data)
        except OSError as e:
            return f"could not cache the summary in {self.dir}: {e.strerror or e}"
        except StoreError as e:
            return f"could not cache the summary: {e}"
        self._prune()
        return None

    def _prune(self) -> None:
        """Keep the newest CACHE_MAX_ENTRIES entries."""
        with contextlib.suppress(OSError):
            entries = [e for e in os.scandir(self.dir) if e.name.endswith(".json")]
            if len(entries) <= CACHE_MAX_ENTRIES:
                return
            entries.sort(key=lambda e: e.stat().st_mtime)
            for entry in entries[:len(entries) - CACHE_MAX_ENTRIES]:
                with contextlib.suppress(OSError):
                    os.unlink(entry.path)


def _strings(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise TypeError("not a list of strings")
    return tuple(value)


def _optional(value: Any, kind: type) -> Any:
    if value is not None and not isinstance(value, kind):
        raise TypeError(f"not a {kind.__name__}")
    return value


def _from_entry(entry: Any, key: str) -> Compacted:
    """A cache entry back as a result; TypeError/KeyError/ValueError if it is not valid."""
    if not isinstance(entry, dict) or entry.get("version") != CACHE_VERSION or \
            entry.get("key") != key or not isinstance(entry.get("result"), dict):
        raise ValueError("not a cache entry of this version and key")
    r = entry["result"]
    if not isinstance(r["session"], str) or not isinstance(r["summary"], str) or \
            not isinstance(r["background"], str) or type(r["tokens"]) is not int or \
            r["method"] not in ("model", "extractive"):
        raise TypeError("bad field")
    summary = Summary(r["background"], _strings(r["topics"]), _strings(r["decisions"]),
                      _strings(r["pending"]), fallback=r["method"] == "extractive",
                      artifacts=_strings(r["files"]))
    return Compacted(r["session"], _optional(r["title"], str), summary, r["summary"],
                     r["tokens"], True, r["method"], _optional(r["model"], str),
                     _optional(r["focus"], str), _optional(r["max_words"], int),
                     _optional(r["parent"], str), _optional(r["fallback_reason"], str))
