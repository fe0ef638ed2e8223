"""The memory files' format: facts (``*.facts.jsonl``) and episodes (``*.episodes.jsonl``), one
JSON object per line, to and from values, and the whole-file check ``memory edit`` runs on save."""

# A forgotten fact stays in its file with "forgotten" set (a tombstone), so extraction never
# adds it again.

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any

CATEGORIES = ("preference", "background", "project", "decision", "contact", "pattern")
PERSONAL = frozenset({"preference", "background"})  # hold everywhere: may go to the user store
SCOPES = ("project", "user")
MAX_TEXT = 500  # characters in one fact
FACT_KEYS = ("id", "text", "category", "confidence", "source_session", "source_turn",
             "created", "last_used", "forgotten", "sig")
_ID_IN_TEXT = re.compile(r'"id"\s*:\s*(\d{1,12})')


@dataclass(frozen=True)
class Fact:
    """One thing worth knowing in later sessions. ``scope``: the file it lives in;
    ``outside``: its line was not written by rollchat (see memory/signing.py): listed, never
    offered to the model until the user reviews it."""

    id: int
    text: str
    category: str
    confidence: float
    source_session: str | None
    source_turn: int | None
    created: datetime
    last_used: datetime | None
    scope: str = "project"
    outside: bool = False

    @property
    def source(self) -> str:
        """Where it came from, for people: ``session X turn N``, or ``remember`` / ``edit``."""
        if self.source_session is None:
            return "added by hand"
        turn = f" turn {self.source_turn}" if self.source_turn is not None else ""
        return f"session {self.source_session}{turn}"

    def as_json(self) -> dict[str, Any]:
        """The object ``rollchat memory --json`` prints."""
        return {"id": self.id, "text": self.text, "category": self.category,
                "confidence": self.confidence, "scope": self.scope,
                "source": {"session": self.source_session, "turn": self.source_turn},
                "created": self.created.isoformat(),
                "last_used": self.last_used.isoformat() if self.last_used else None,
                "outside": self.outside}


@dataclass(frozen=True)
class Episode:
    """One session's story as a compaction or an exit left it: its summary (markdown)."""

    session_id: str
    title: str | None
    summary: str
    span: str
    created: datetime

    def as_json(self) -> dict[str, Any]:
        return {"session_id": self.session_id, "title": self.title, "summary": self.summary,
                "span": self.span, "created": self.created.isoformat()}


@dataclass(frozen=True)
class Stored:
    """A fact record as its file holds it: the fact, when it was forgotten (or None), and the
    signature of rollchat's write (None: the line has none)."""

    fact: Fact
    forgotten: datetime | None
    sig: str | None = None


class RecordError(ValueError):
    """A line that is not a valid record; its message says what is wrong with it."""


def normalized(text: str) -> str:
    """The text facts are compared by: case, punctuation and spacing do not count."""
    return " ".join(re.sub(r"[^\w\s]", " ", text.casefold()).split())


def clean_text(text: str) -> str:
    """A fact's text on one line (a newline in it would be a second fact to a reader)."""
    return " ".join(text.split())


def _time(value: Any, key: str, optional: bool = False) -> datetime | None:
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise RecordError(f'"{key}" must be an ISO date-time string')
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise RecordError(f'"{key}" is not an ISO date-time: {value[:40]!r}') from None
    if parsed.tzinfo is None:
        parsed = parsed.astimezone()
    return parsed


def check_fact_fields(text: Any, category: Any, confidence: Any) -> str:
    """The fact's cleaned text; RecordError naming what is wrong."""
    if not isinstance(text, str) or not clean_text(text):
        raise RecordError('"text" must be a non-empty string')
    if len(clean_text(text)) > MAX_TEXT:
        raise RecordError(f'"text" is longer than {MAX_TEXT} characters')
    if category not in CATEGORIES:
        raise RecordError(f'"category" must be one of {", ".join(CATEGORIES)} '
                          f"(not {category!r})")
    if isinstance(confidence, bool) or not isinstance(confidence, (int, float)) \
            or not 0.0 <= confidence <= 1.0:
        raise RecordError('"confidence" must be a number from 0 to 1')
    return clean_text(text)


def _object(line: str) -> dict[str, Any]:
    """A line's JSON object; RecordError when it is not one."""
    try:
        data = json.loads(line)
    except ValueError as e:
        raise RecordError(f"not JSON ({e})") from None
    if not isinstance(data, dict):
        raise RecordError("not a JSON object")
    return data


def parse_fact(line: str, scope: str) -> Stored:
    """A facts-file line as a Stored fact; RecordError when it is not one."""
    data = _object(line)
    unknown = sorted(set(data) - set(FACT_KEYS))
    if unknown:
        raise RecordError(f"unknown key {unknown[0]!r}")
    ident = data.get("id")
    if isinstance(ident, bool) or not isinstance(ident, int) or ident < 1:
        raise RecordError('"id" must be a positive integer')
    text = check_fact_fields(data.get("text"), data.get("category"),
                             data.get("confidence", 1.0))
    session, turn = data.get("source_session"), data.get("source_turn")
    if session is not None and not isinstance(session, str):
        raise RecordError('"source_session" must be a string or null')
    if turn is not None and (isinstance(turn, bool) or not isinstance(turn, int)):
        raise RecordError('"source_turn" must be an integer or null')
    sig = data.get("sig")
    if sig is not None and not isinstance(sig, str):
        raise RecordError('"sig" must be a string')
    created = _time(data.get("created"), "created")
    assert created is not None
    fact = Fact(ident, text, data["category"], float(data.get("confidence", 1.0)), session,
                turn, created, _time(data.get("last_used"), "last_used", True), scope)
    return Stored(fact, _time(data.get("forgotten"), "forgotten", True), sig)


def fact_line(stored: Stored) -> str:
    """The line a fact record is written as (no newline), its signature last."""
    data = record_data(stored)
    if stored.sig is not None:
        data["sig"] = stored.sig
    return json.dumps(data, ensure_ascii=False)


def record_data(stored: Stored) -> dict[str, Any]:
    """A fact record's fields as its line holds them, the signature left out (what the
    signature covers)."""
    fact = stored.fact
    data: dict[str, Any] = {
        "id": fact.id, "text": fact.text, "category": fact.category,
        "confidence": fact.confidence, "source_session": fact.source_session,
        "source_turn": fact.source_turn, "created": fact.created.isoformat(),
        "last_used": fact.last_used.isoformat() if fact.last_used else None}
    if stored.forgotten is not None:
        data["forgotten"] = stored.forgotten.isoformat()
    return data


def id_in_damaged(line: str) -> int | None:
    """The id a damaged line seems to hold, so that a new fact never takes it."""
    match = _ID_IN_TEXT.search(line)
    return int(match[1]) if match else None


def parse_episode(line: str) -> Episode:
    data = _object(line)
    session_id, summary = data.get("session_id"), data.get("summary")
    if not isinstance(session_id, str) or not session_id:
        raise RecordError('"session_id" must be a non-empty string')
    if not isinstance(summary, str):
        raise RecordError('"summary" must be a string')
    title, span = data.get("title"), data.get("span", "")
    if title is not None and not isinstance(title, str):
        raise RecordError('"title" must be a string or null')
    if not isinstance(span, str):
        raise RecordError('"span" must be a string')
    created = _time(data.get("created"), "created")
    assert created is not None
    return Episode(session_id, title, summary, span, created)


def episode_line(episode: Episode) -> str:
    return json.dumps(episode.as_json(), ensure_ascii=False)


def check_facts_file(text: str, scope: str) -> list[str]:
    """Every problem of a whole facts file, ``line N: what`` (``memory edit`` on save)."""
    problems: list[str] = []
    seen: dict[int, int] = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            stored = parse_fact(line, scope)
        except RecordError as e:
            problems.append(f"line {number}: {e}")
            continue
        first = seen.setdefault(stored.fact.id, number)
        if first != number:
            problems.append(f"line {number}: id {stored.fact.id} is already used on line "
                            f"{first}")
    return problems
