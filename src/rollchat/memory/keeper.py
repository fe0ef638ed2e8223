"""What a session remembers with: ``remember`` and ``forget`` from the chat, fact extraction at
a compaction, at exit and when the chat is idle (one at a time, only when there are new
turns), an episode per summary, and the ``memory_search`` tool. Its flows yield events; no
terminal here.

Extraction never holds the chat up: at a compaction (and a resume, fork or clear) and when
idle it runs in a background thread, whose events wait in ``take()`` (``notify`` is called when
some are ready). At exit it has a deadline (``memory.extract_timeout_seconds``, or what is left
of the summary's budget on SIGTERM/SIGHUP) shared with the extractions still under way; one
dim line says so when it takes a moment, and when the model misses the deadline the offline
phrase rules extract the explicit statements instead (instant) and the model's facts are lost
for that exit.

Facts are the user's own words (see extract.own_facts). Piped input may be a document rather
than the user speaking: unless the user passed --trust-input (this input is mine), nothing is
extracted from it and its ``remember`` lines are refused, as a tool call that needs asking is
refused with nobody to ask."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from rollchat.domain import Summary, Turn, Usage
from rollchat.errors import RollchatError
from rollchat.events import Event, FactRemembered, Notice
from rollchat.interrupts import join, start_worker
from rollchat.memory.extract import (
    ExtractionError,
    ExtractionTimeout,
    extract,
    latest_messages,
    own_facts,
)
from rollchat.memory.records import Episode
from rollchat.memory.rules import FoundFact, extract_rules
from rollchat.memory.store import MemoryStore, SecretRefused
from rollchat.providers.base import Provider
from rollchat.text.wording import plural

if TYPE_CHECKING:
    from rollchat.config.settings import Config
    from rollchat.models.current import CurrentModel
    from rollchat.tools import Tool

Flow = Generator[Event, None, None]
MAX_EXTRACT_SECONDS = 30.0
EXIT_EXTRACT_SECONDS = 10.0  # the default of memory.extract_timeout_seconds
QUIET_SECONDS = 0.3  # an exit extraction quicker than this is not announced
PREFERENCE_START = re.compile(r"\s*(?:prefers?|likes?|dislikes?|hates?|loves?|wants?|"
                              r"would rather|always|never)\b", re.I)


def episode_text(summary: Summary) -> str:
    """A summary as an episode keeps it: the block's markdown without its markers."""
    from rollchat.storage.transcript import render_summary_block

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


@dataclass
class _Job:
    """An extraction running (or queued) in the background."""

    turns: list[Turn]
    session_id: str | None
    thread: threading.Thread | None = None
    done: threading.Event = field(default_factory=threading.Event)


class Memory:
    """The memory of one chat (see the module docstring). ``provider``/``model``: the
    extraction call's (the summarizer's); ``follows``: the chat's model, asked at each
    extraction, when the summarizer uses it (``model NAME`` then changes both); ``timeout``:
    seconds it may take in the background; ``exit_seconds``: at exit, extractions under way
    included. ``typed``: the chat's input is typed at a terminal (False: piped, see the module
    docstring); ``yes``: --trust-input."""

    def __init__(self, store: MemoryStore, provider: Provider, *, model: str,
                 timeout: float = MAX_EXTRACT_SECONDS,
                 exit_seconds: float = EXIT_EXTRACT_SECONDS, typed: bool = True,
                 yes: bool = False, notes: Sequence[str] = (),
                 follows: CurrentModel | None = None) -> None:
        self.store = store
        self.notes = tuple(notes)  # what the user is told at the start (see opened())
        self.last_episode: Episode | None = None  # the episode the latest summary kept
        self.own_input = typed or yes  # what the chat is sent is the user speaking
        self.provider = provider
        self._model, self.follows = model, follows
        self.timeout = min(timeout, MAX_EXTRACT_SECONDS)
        self.exit_seconds = exit_seconds
        self._running = threading.Lock()  # one extraction at a time
        self._last: datetime | None = None  # the newest turn already extracted from
        self._guard = threading.Lock()  # the jobs and the events they left
        self._jobs: list[_Job] = []
        self._done: list[Event] = []
        self._spent: list[tuple[str, Usage]] = []  # (model, usage) of each call: see spent()
        self._notify: Callable[[], None] | None = None  # events are waiting in take()

    @property
    def model(self) -> str:
        """The model extraction asks: the chat's current one when it follows it."""
        return self._model if self.follows is None else self.follows.name

    def notify_with(self, wake: Callable[[], None] | None) -> None:
        """Call ``wake`` whenever a background extraction leaves events in ``take()`` (the
        idle prompt draws them); None: nobody is told, the events wait."""
        with self._guard:
            self._notify = wake

    def _problems(self) -> list[Event]:
        return [Notice("warning", f"memory: {p}") for p in self.store.take_problems()]

    # ------------------------------------------------------------ by hand
    def remember(self, text: str, session_id: str | None, turn: int | None) -> Flow:
        """``remember TEXT``: a fact the user states. ``CATEGORY: TEXT`` names its category;
        else it is the one the phrase rules find in it, else ``project``."""
        if not self.own_input:
            yield Notice("warning", "Not remembered: a 'remember' line in piped input may come "
                                    "from a document, not from you. Type it at the prompt, or "
                                    "pass --trust-input to take facts from piped input.")
            return
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
                wait: float | None = None, timeout: float | None = None,
                bounded: bool = False) -> list[Event] | None:
        """New facts from the latest turns: the model's (``local``: the rules', no call;
        ``timeout``: the model's seconds, else ``self.timeout``). Only when there are turns
        since the last extraction; with another extraction under way it waits ``wait``
        seconds (None: as long as it takes), then gives up: None. ``bounded``: ``timeout``
        is a stated bound (the exit's): it counts from now, the wait for the server's turn
        included, and missing it raises ExtractionTimeout instead of a warning."""
        if not self._running.acquire(timeout=-1 if wait is None else max(wait, 0.0)):
            return None
        try:
            return self._extract(list(turns), session_id, local, timeout, bounded)
        finally:
            self._running.release()

    def _due(self, turns: Sequence[Turn]) -> bool:
        """Turns since the last extraction (never from piped input without --trust-input)?"""
        queries = [t for t in turns if t.kind == "query"] if self.own_input else []
        return bool(queries) and (self._last is None or queries[-1].started > self._last)

    def _extract(self, turns: list[Turn], session_id: str | None, local: bool,
                 timeout: float | None = None, bounded: bool = False) -> list[Event]:
        queries = [t for t in turns if t.kind == "query"]
        if not self._due(turns):
            return []
        events: list[Event] = []
        try:
            known = [f.text for f in self.store.facts()]
            if local:
                found, invalid = extract_rules(latest_messages(turns))[:5], 0
            else:
                model = self.model

                def spent(usage: Usage) -> None:
                    with self._guard:
                        self._spent.append((model, usage))

                found, invalid = extract(self.provider, turns, known, model=model,
                                         timeout=self.timeout if timeout is None else timeout,
                                         spent=spent, from_call=bounded)
        except ExtractionError as e:
            if bounded and isinstance(e, ExtractionTimeout):
                raise  # the caller's deadline passed: it tells the user and falls back
            return [*self._problems(), Notice("warning", f"no facts extracted this time: {e}")]
        except RollchatError as e:
            return [*self._problems(), Notice("warning", f"no facts extracted this time: {e}")]
        self._last = queries[-1].started
        if invalid:
            events.append(Notice("warning", f"memory: {plural(invalid, 'invalid fact')} in "
                                            "the model's reply skipped"))
        found, unsaid = own_facts(found, turns)
        if unsaid:
            events.append(Notice("detail", f"memory: {plural(unsaid, 'fact')} not kept: not "
                                           "in the words of a message of yours"))
        events += self._keep(found, session_id)
        return [*self._problems(), *events]

    def _keep(self, found: list[FoundFact], session_id: str | None) -> list[Event]:
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

    # ------------------------------------------------------------ in the background
    def start(self, turns: Sequence[Turn], session_id: str | None, *,
              queue: bool = True) -> bool:
        """Extract from ``turns`` in a background thread; its events wait in ``take()``.
        ``queue``: after the extraction under way (a compaction's turns must not be skipped),
        else not at all when one is under way (idle). False when nothing was started."""
        turns = list(turns)
        if not self._due(turns) or (not queue and self._running.locked()):
            return False
        job = _Job(turns, session_id)
        job.thread = threading.Thread(target=self._work, args=(job, None if queue else 0),
                                      name="rollchat-memory", daemon=True)
        with self._guard:
            self._jobs.append(job)
        start_worker(job.thread)
        return True

    def _work(self, job: _Job, wait: float | None) -> None:
        try:
            events = self.extract(job.turns, job.session_id, wait=wait) or []
        except Exception as e:  # a bug must not kill the chat from a thread
            events = [Notice("warning", f"no facts extracted this time: {e}")]
        with self._guard:
            self._done += events
            self._jobs.remove(job)
            notify = self._notify
        job.done.set()
        if events and notify is not None:
            notify()

    def take(self) -> list[Event]:
        """The events of the background extractions finished since the last call."""
        with self._guard:
            events, self._done = self._done, []
        return events

    def spent(self) -> list[tuple[str, Usage]]:
        """The model calls extraction made since the last call, each as (the model that
        answered, its usage), to be billed to the session (in the background ones too)."""
        with self._guard:
            calls, self._spent = self._spent, []
        return calls

    def busy(self) -> bool:
        """An extraction is under way (or queued) in the background."""
        with self._guard:
            return bool(self._jobs)

    def wait(self, seconds: float) -> bool:
        """Wait for the background extractions up to ``seconds``; True when none is left."""
        deadline = time.monotonic() + seconds
        with self._guard:
            jobs = list(self._jobs)
        for job in jobs:
            job.done.wait(max(0.0, deadline - time.monotonic()))
        return not self.busy()

    # ------------------------------------------------------------ compaction, exit
    def at_summary(self, turns: Sequence[Turn], session_id: str | None,
                   summary: Summary | None, *, ending: bool = False,
                   within: float | None = None, title: str | None = None) -> Flow:
        """At a compaction or an exit: the session's summary as an episode (first: it is
        quick and local), then facts from the last turns: in the background at a compaction
        (the chat goes on), within a deadline at an exit (``ending``; ``within``: the seconds
        left on SIGTERM/SIGHUP, else ``exit_seconds``)."""
        events: list[Event] = []
        if summary is not None and session_id is not None:
            try:
                self.last_episode = self.store.add_episode(
                    session_id, episode_text(summary), title=title, span=span(turns))
            except RollchatError as e:
                events.append(Notice("warning", f"memory: the episode was not kept: {e}"))
        yield from events
        if not ending:
            self.start(turns, session_id)
            return
        seconds = self.exit_seconds if within is None else min(within, self.exit_seconds)
        yield from self._at_exit(list(turns), session_id, seconds)

    def _at_exit(self, turns: list[Turn], session_id: str | None, seconds: float) -> Flow:
        """The exit's extraction, the background ones still under way first, all within
        ``seconds``; past it (or on Ctrl-C) the offline rules instead, on their turns too."""
        if not self.busy() and not self._due(turns):
            yield from self.take()
            return
        deadline, shown = time.monotonic() + seconds, f"{round(seconds, 1):g}s"
        result: list[list[Event] | None] = []

        def work() -> None:
            self.wait(max(0.0, deadline - time.monotonic()))
            left = deadline - time.monotonic()
            try:  # the call ends at the deadline, its connection closed
                result.append(self.extract(turns, session_id, wait=left, timeout=left,
                                           bounded=True) if left > 0 else None)
            except ExtractionTimeout:
                result.append(None)  # missed: the rules instead, as for a call still going
            except Exception as e:  # (a bug) told, as a failed extraction is
                result.append([Notice("warning", f"no facts extracted this time: {e}")])

        worker = threading.Thread(target=work, name="rollchat-memory-exit", daemon=True)
        try:
            if seconds > 0:  # a daemon: a call that hangs must not hold the exit
                start_worker(worker)
                if not join(worker, min(QUIET_SECONDS, seconds)):
                    yield Notice("detail", f"Remembering… (at most {shown}; Ctrl-C "
                                           "skips it)")
                    join(worker, max(0.0, deadline - time.monotonic()) + 0.2)
            yield from self.take()
            if result and result[0] is not None:
                yield from result[0]
                return
            why = (f"the model did not answer within {shown}" if seconds > 0
                   else "no time left at exit")
        except KeyboardInterrupt:
            why = "fact extraction interrupted"
        yield Notice("warning", f"memory: {why}: only explicit statements were remembered "
                                "this time (by the offline rules)")
        yield from self._by_rules(turns, session_id)

    def _by_rules(self, turns: list[Turn], session_id: str | None) -> list[Event]:
        """The offline rules on the turns of the extractions given up on (oldest first),
        then on ``turns``. Their threads are left to end with the process."""
        with self._guard:
            jobs = list(self._jobs)
        events: list[Event] = []
        for job in jobs:
            events += self._extract(job.turns, job.session_id, True)
        return [*events, *self._extract(turns, session_id, True)]

    def undone(self, session_id: str | None) -> Flow:
        """A compaction of ``session_id`` was undone: the episode its summary left goes (the
        summary itself was removed from the session's file)."""
        episode, self.last_episode = self.last_episode, None
        if episode is None or episode.session_id != session_id:
            return
        try:
            self.store.drop_episode(episode)
        except RollchatError as e:
            yield Notice("warning", f"memory: the undone compaction's episode was kept: {e}")

    # ------------------------------------------------------------ the tool
    def search_tool(self) -> Tool:
        """``memory_search`` (read-only), for a session (or its child) starting now: offered
        with every request while the memory holds something, else only beside other tools,
        so the offered tools never change between compactions."""
        from rollchat.memory.tool import memory_tool

        try:
            holds = bool(self.store.facts() or self.store.episodes())
        except RollchatError:
            holds = False
        return memory_tool(self.store, companion=not holds)


def open_memory(cfg: Config, provider: Provider, model: str, *, typed: bool = True,
                yes: bool = False, follows: CurrentModel | None = None) -> Memory:
    """The chat's Memory: the store, and the summarizer's provider for extraction (``typed``,
    ``yes``, ``follows``: see Memory); its ``notes`` are told at the start."""
    from rollchat.memory.opening import opened

    found = opened(cfg)
    return Memory(found.store, provider, model=model,
                  timeout=cfg.summary.timeout_seconds,
                  exit_seconds=cfg.memory.extract_timeout_seconds, typed=typed, yes=yes,
                  notes=found.notes, follows=follows)
