"""The memory layers of a request, what the model is told besides the chat: the persona, the
user profile, and a per-turn block (the date, the relevant facts); and their share of the window."""

# Every chat request is built in this order:
#
# 1. the persona: the agent's system prompt, then the project instructions (AGENTS.md and the
#    like: session/instructed.py), read again at each new context;
# 2. the user profile: remembered facts about the user (scope ``user``, or category
#    ``preference`` / ``background``), each with its source;
# 3. the session context: the restored summary exchange (the stable prefix of the messages);
# 4. per turn, one marked context block at the start of the current user message: the date and
#    time in the user's time zone (at a context's first message, then again on a new day or
#    once TIME_STEP has passed) and the facts most relevant to the message (BM25, from the
#    store), each with its source; no block when it would hold neither (a small window's
#    quick exchanges pay nothing for it).
#
# Layers 1 and 2 form the system prompt. The profile is frozen when a session starts (and again
# at each compaction or resume), so the system prompt stays byte-identical from turn to turn and
# the provider's prompt cache keeps working; a fact remembered mid-session reaches the model
# through the per-turn block (when it is relevant to a message) until the next compaction puts
# it in the profile. The block goes into the user message, never into the system prompt, and is
# kept with that message: later requests send it again byte for byte (and the transcript records
# it as context, not as something the user typed).
#
# Both memory layers together take at most ``max_share`` of the context window: the profile at
# most half of it, the block the rest (facts that do not fit are left out, the date never).
# Both are counted by the estimator, since they are part of the system prompt and the messages.

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Protocol

from rollchat.errors import RollchatError

BLOCK_OPEN = "<context>"
BLOCK_CLOSE = "</context>"
PROFILE_HEADING = "What you know about the user (remembered from earlier sessions):"
RELEVANT_HEADING = "Relevant memory (remembered facts, with their source):"
TIME_STEP = timedelta(minutes=10)  # the time is told again once this much has passed
PROFILE_CATEGORIES = frozenset({"preference", "background"})  # memory.records.PERSONAL
RELEVANT_FACTS = 5
DEFAULT_SHARE = 0.1


class FactLike(Protocol):
    """What the layers read of a remembered fact (rollchat.memory.store.Fact)."""

    @property
    def id(self) -> int: ...
    @property
    def text(self) -> str: ...
    @property
    def category(self) -> str: ...
    @property
    def scope(self) -> str: ...
    @property
    def source_session(self) -> str | None: ...
    @property
    def source_turn(self) -> int | None: ...


class FactSource(Protocol):
    """The fact store as the layers use it: every fact, the most relevant ones (BM25), and
    the note that some were used."""

    def facts(self) -> Sequence[FactLike]: ...
    def relevant(self, query: str, k: int = 5) -> Sequence[FactLike]: ...
    def mark_used(self, ids: Iterable[int]) -> None: ...


def local_now() -> datetime:
    """The current time in the user's local time zone."""
    return datetime.now(timezone.utc).astimezone()


def squash_spaces(text: str) -> str:
    """A fact as one line: whitespace runs (line breaks included) become one space, so no fact
    can close the block or look like a heading."""
    return " ".join(text.split())


def source_of(fact: FactLike) -> str:
    if not fact.source_session:
        return "added by hand"
    turn = f", turn {fact.source_turn}" if fact.source_turn else ""
    return f"session {fact.source_session}{turn}"


def fact_bullet(fact: FactLike) -> str:
    return f"- {squash_spaces(fact.text)} ({source_of(fact)})"


def is_profile(fact: FactLike) -> bool:
    return fact.scope == "user" or fact.category in PROFILE_CATEGORIES


def when(now: datetime) -> str:
    """``Monday 2026-11-23 21:40 CET (UTC+01:00)``: the date and time where the user is."""
    offset = now.strftime("%z")
    offset = f"UTC{offset[:3]}:{offset[3:]}" if offset else "UTC"
    name = now.tzname() or ""
    zone = f"{name} ({offset})" if name and not name.startswith(("UTC", "+", "-")) else offset
    return f"{now:%A %Y-%m-%d %H:%M} {zone}"


def fit(lines: Sequence[str], render: Callable[[Sequence[str]], str],
        count: Callable[[str], int], limit: int) -> tuple[str, int]:
    """The rendering of the longest head of ``lines`` that fits ``limit`` tokens, and how many
    lines it holds ("" and 0 when even the rendering without any line does not fit)."""
    kept = len(lines)
    while kept >= 0:
        text = render(lines[:kept])
        if count(text) <= limit:
            return text, kept
        kept -= 1
    return "", 0


def render_profile(lines: Sequence[str]) -> str:
    return "\n".join([PROFILE_HEADING, *lines]) if lines else ""


def render_block(now: datetime | None, lines: Sequence[str]) -> str:
    """The block: the time (None: not told again) and the facts; "" when it holds neither."""
    body = [f"Now: {when(now)}"] if now is not None else []
    if lines:
        body += [RELEVANT_HEADING, *lines]
    return "\n".join([BLOCK_OPEN, *body, BLOCK_CLOSE]) if body else ""


def with_block(block: str, text: str) -> str:
    """The content of a user message: the context block, a blank line, the user's text."""
    return f"{block}\n\n{text}" if block else text


def split_block(content: str) -> tuple[str, str]:
    """(block, user text) of a user message's content; ("", content) when it has no block.
    The block's lines are one-line facts, so its first closing line is its end."""
    if not content.startswith(BLOCK_OPEN + "\n"):
        return "", content
    end = content.find(f"\n{BLOCK_CLOSE}\n\n")
    if end < 0:
        return "", content
    cut = end + len(BLOCK_CLOSE) + 1
    return content[:cut], content[cut + 2:]


def system_prompt(persona: str, profile: str) -> str:
    """The stable layers: the persona, then the user profile."""
    return f"{persona}\n\n{profile}" if profile and persona else profile or persona


@dataclass
class MemoryLayers:
    """Builds the profile layer (frozen per context) and each turn's block from ``source``.

    ``share``: the part of the context window the memory layers may take together: the
    profile, and the blocks of the messages in the context. ``dedupe``: a fact already in the
    context (in an earlier message's block, sent again with it in every request) is not
    repeated; off when the history is chosen per turn (``session.history: relevant``), since
    that earlier message may not be sent.
    """

    source: FactSource
    share: float = DEFAULT_SHARE
    clock: Callable[[], datetime] = local_now
    dedupe: bool = True
    frozen: frozenset[int] = field(default_factory=frozenset)  # the facts in the profile
    profile: str = ""
    in_context: set[int] = field(default_factory=set)  # facts in the context's blocks
    spent: int = 0  # tokens of the blocks in the context
    last_block: str = ""  # the block of the last message (for the ``context`` command)
    last_facts: tuple[int, ...] = ()  # the facts it holds
    told: datetime | None = None  # the time the context's messages last told the model
    last_time: datetime | None = None  # the time in the last block (None: left out)
    problems: list[str] = field(default_factory=list)  # store errors not told yet

    def limit(self, window: int) -> int:
        return int(window * self.share)

    def freeze(self, window: int, count: Callable[[str], int]) -> str:
        """The profile layer for the context starting now (kept until the next one)."""
        try:
            facts = [f for f in self.source.facts() if is_profile(f)]
        except RollchatError as e:  # an unreadable store: the persona alone, said once
            self.problems.append(f"memory: {e}; the user profile is left out until the next "
                                 "compaction")
            facts = []
        self.profile, kept = fit([fact_bullet(f) for f in facts], render_profile, count,
                                 self.limit(window) // 2)
        self.frozen = frozenset(f.id for f in facts[:kept])
        self.in_context, self.spent, self.told = set(), 0, None
        return self.profile

    def block(self, text: str, window: int, count: Callable[[str], int]) -> str:
        """The context block for a user message ``text``: now, and of the facts most relevant
        to it those the context does not hold yet (in the profile or an earlier block), as many
        of the best as fit in what is left of the share."""
        known = self.frozen | self.in_context if self.dedupe else self.frozen
        try:
            facts = [f for f in self.source.relevant(text, k=RELEVANT_FACTS)
                     if f.id not in known]
        except RollchatError as e:  # the message goes with the date and time only
            self.problems.append(f"memory: {e}; this message goes without remembered facts")
            facts = []
        room = max(self.limit(window) - count(self.profile) - self.spent, 0)
        now = self._time()
        block, kept = fit([fact_bullet(f) for f in facts], lambda ls: render_block(now, ls),
                          count, room)
        if not block and now is not None:  # the time, when due, is always sent
            block = render_block(now, [])
        self.last_time = now
        if kept:
            try:
                self.source.mark_used([f.id for f in facts[:kept]])
            except RollchatError as e:
                self.problems.append(f"memory: {e}")
        self.last_block, self.last_facts = block, tuple(f.id for f in facts[:kept])
        return block

    def _time(self) -> datetime | None:
        """The time to tell with this message: at the context's first message, on a new day,
        when TIME_STEP has passed since it was last told, or always when earlier messages may
        not be sent (``dedupe`` off); else None (the block is left out when it has no facts
        either, so a quick exchange costs no tokens for it)."""
        now, told = self.clock(), self.told
        if told is None or not self.dedupe or now.date() != told.date() or not (
                told <= now < told + TIME_STEP):
            return now
        return None

    def take_problems(self) -> list[str]:
        problems, self.problems = self.problems, []
        return problems

    def sent(self, count: Callable[[str], int]) -> None:
        """The last block's message stays in the context (it was answered)."""
        self.in_context.update(self.last_facts)
        self.spent += count(self.last_block)
        if self.last_time is not None:
            self.told = self.last_time
