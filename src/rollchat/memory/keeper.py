"""What a session remembers with: ``remember`` and ``forget`` from the chat, fact extraction at
a compaction, at exit and when the chat is idle (one at a time, only when there are new
turns), an episode per summary, and the ``memory_search`` tool. Its flows yield events; no
terminal here."""

from __future__ import annotations

import re
import threading
from collections.abc import Generator, Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from rollchat.domain import Summary, Turn
from rollchat.errors import RollchatError
from rollchat.events import Event, FactRemembered, Notice
from rollchat.memory.extract import ExtractionError, extract, latest_messages
from rollchat.memory.rules import Candidate, extract_rules
from rollchat.memory.store import MemoryStore, SecretRefused
from rollchat.providers.base import Provider
from rollchat.text import plural

if TYPE_CHECKING:
    from rollchat.config import Config
    from rollchat.engine import Engine

Flow = Generator[Event, None, None]
MAX_EXTRACT_SECONDS = 30.0
PREFERENCE_START = re.compile(r"\s*(?:prefers?|likes?|dislikes?|hates?|loves?|wants?|"
                              r"would rather|always|never)\b", re.I)


def episode_text(summary: Summary) -> str:
    """A summary as an episode keeps it: the block's markdown without its markers."""
    from rollchat.transcript import render_summary_block

    lines = render_summary_block(summary).strip("\n").split("\n")
    return "\n".join(lines[1:-1]).strip()


def span(turns: Sequence[Turn]) -> str:
    """The first and last turn's times: ``2026-01-02 10:00 – 11:30`` (or across days)."""
    times = [t.started for t in turns if t.kind != "restored"]
    if not times:
        return ""
    first, last = min(times), max(times)
    end = f"{last:%H:%M}" if first.date() == last.date() else f"{last:%Y-%m-%d %H:%M}"
    return f"{first:%Y-%m-%d %H:%M} – {end}"


def categorize(text: str) -> tuple[str, str]:
    """(category, text) of a fact typed with ``remember``: ``preference: tabs`` names it."""
    from rollchat.memory.records import CATEGORIES
    from rollchat.memory.rules import statements

    head, colon, rest = text.partition(":")
    if colon and head.strip().lower() in CATEGORIES and rest.strip():
        return head.strip().lower(), rest.strip()
    found = statements(text)
    if found:
        return found[0][1], text
    if PREFERENCE_START.match(text):
        return "preference", text
    return "project", text


class Memory:
    """The memory of one chat (see the module docstring). ``provider``/``model``: the
    extraction call's (the summarizer's); ``timeout``: seconds it may take."""

    def __init__(self, store: MemoryStore, provider: Provider, *, model: str,
                 timeout: float = MAX_EXTRACT_SECONDS) -> None:
        self.store = store
        self.provider = provider
        self.model = model
        self.timeout = min(timeout, MAX_EXTRACT_SECONDS)
        self._running = threading.Lock()  # one extraction at a time
        self._last: datetime | None = None  # the newest turn already extracted from

    def _problems(self) -> list[Event]:
        return [Notice("warning", f"memory: {p}") for p in self.store.take_problems()]

    # ------------------------------------------------------------ by hand
    def remember(self, text: str, session_id: str | None, turn: int | None) -> Flow:
        """``remember TEXT``: a fact the user states. ``CATEGORY: TEXT`` names its category;
        else it is the one the phrase rules find in it, else ``project``."""
        category, text = categorize(text)
        try:
            fact = self.store.add(text, category, confidence=1.0, source_session=session_id,
                                  source_turn=turn)
        except RollchatError as e:
            yield Notice("error", str(e))
            return
        yield from self._problems()
        if fact is None:
            yield Notice("info", "Already remembered (or forgotten for good): nothing added.")
            return
        yield FactRemembered(fact)

    def forget(self, fact_id: int) -> Flow:
        fact = self.store.forget(fact_id)  # MemoryStoreError: told by the caller
        yield from self._problems()
        yield Notice("info", f"Forgot {fact.id}: {fact.text}")

    # ------------------------------------------------------------ extraction
    def extract(self, turns: Sequence[Turn], session_id: str | None, *, local: bool = False,
                wait: float | None = None) -> list[Event]:
        """New facts from the latest turns: the model's (``local``: the rules', no call). Only
        when there are turns since the last extraction; with another extraction under way it
        waits ``wait`` seconds (None: as long as it takes), then gives up."""
        if not self._running.acquire(timeout=-1 if wait is None else wait):
            return []
        try:
            return self._extract(list(turns), session_id, local)
        finally:
            self._running.release()

    def _extract(self, turns: list[Turn], session_id: str | None, local: bool) -> list[Event]:
        queries = [t for t in turns if t.kind == "query"]
        if not queries or (self._last is not None and queries[-1].started <= self._last):
            return []
        events: list[Event] = []
        try:
            known = [f.text for f in self.store.facts()]
            if local:
                found, invalid = extract_rules(latest_messages(turns))[:5], 0
            else:
                found, invalid = extract(self.provider, turns, known, model=self.model,
                                         timeout=self.timeout)
        except ExtractionError as e:
            return [*self._problems(), Notice("warning", f"no facts extracted this time: {e}")]
        except RollchatError as e:
            return [*self._problems(), Notice("warning", f"no facts extracted this time: {e}")]
        self._last = queries[-1].started
        if invalid:
            events.append(Notice("warning", f"memory: {plural(invalid, 'invalid fact')} in "
                                            "the model's reply skipped"))
        events += self._keep(found, session_id)
        return [*self._problems(), *events]

    def _keep(self, found: list[Candidate], session_id: str | None) -> list[Event]:
        events: list[Event] = []
        secrets = 0
        for candidate in found:
            try:
                fact = self.store.add(candidate.text, candidate.category,
                                      confidence=candidate.confidence,
                                      source_session=session_id, source_turn=candidate.turn)
            except SecretRefused:  # said, but no secret goes into memory
                secrets += 1
                continue
            except RollchatError as e:
                events.append(Notice("warning", f"memory: {e}"))
                break
            if fact is not None:
                events.append(FactRemembered(fact))
        if secrets:
            events.append(Notice("info", f"Not remembered: {plural(secrets, 'fact')} that "
                                         "looked like a secret (a password, a key or a token)."))
        return events

    def at_summary(self, turns: Sequence[Turn], session_id: str | None,
                   summary: Summary | None, *, local: bool = False,
                   title: str | None = None) -> Flow:
        """At a compaction or an exit: the session's summary as an episode (first: it is
        quick and local), then facts from the last turns. Ctrl-C while the model extracts them
        falls back to the phrase rules (instant), so the exit or compaction goes on."""
        events: list[Event] = []
        if summary is not None and session_id is not None:
            try:
                self.store.add_episode(session_id, episode_text(summary), title=title,
                                       span=span(turns))
            except RollchatError as e:
                events.append(Notice("warning", f"memory: the episode was not kept: {e}"))
        try:
            events += self.extract(turns, session_id, local=local,
                                   wait=None if not local else 1)
        except KeyboardInterrupt:
            events.append(Notice("warning", "fact extraction interrupted: only explicit "
                                            "statements were remembered this time"))
            events += self.extract(turns, session_id, local=True, wait=1)
        yield from events

    # ------------------------------------------------------------ the tool
    def install(self, engine: Engine) -> None:
        """Register ``memory_search`` (read-only): offered with every request while the
        memory holds something when a session (or its child) starts, else only beside other
        tools, so the offered tools never change between compactions."""
        from rollchat.memory.tool import memory_tool
        from rollchat.tools import MEMORY_TOOL_NAME

        try:
            holds = bool(self.store.facts() or self.store.episodes())
        except RollchatError:
            holds = False
        engine.tools[MEMORY_TOOL_NAME] = memory_tool(self.store, companion=not holds)


def open_store(cfg: Config) -> MemoryStore:
    """The memory store of the configured agent (MemoryStoreError on a bad setting)."""
    from rollchat.memory.store import default_user_dir

    memory = cfg.memory
    return MemoryStore(cfg.session.dir, cfg.agent.key,
                       user_dir=memory.user_dir or default_user_dir(), scope=memory.scope)


def open_memory(cfg: Config, provider: Provider, model: str) -> Memory:
    """The chat's Memory: the store, and the summarizer's provider for extraction."""
    return Memory(open_store(cfg), provider, model=model,
                  timeout=cfg.summary.timeout_seconds)
