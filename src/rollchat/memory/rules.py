"""The offline extraction: explicit statements in what the user said, found by phrase
patterns ("I prefer", "I'd rather", "always", "never", "my X is", "we decided/picked/chose")
and turned into short third-person facts ("prefers tabs over spaces")."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

RULE_CONFIDENCE = 0.9  # an explicit statement
MAX_WORDS = 30  # a longer sentence is not one fact
CONTACT_WORDS = frozenset((
    "email", "e-mail", "phone", "number", "manager", "boss", "colleague", "coworker",
    "co-worker", "lead", "teammate", "contact", "address", "handle", "username", "slack",
    "github", "partner", "wife", "husband", "friend", "assistant", "doctor", "client",
))
_SENTENCES = re.compile(r"[^.!?;\n]+[.!?;]?")
_LEAD = r"(?:^|\b(?:and|but|so|also|please|really|actually|generally|usually|just)\s+)"


@dataclass(frozen=True)
class Candidate:
    """A fact found in the conversation (by the model or by a rule), not yet stored."""

    text: str
    category: str
    confidence: float
    turn: int | None = None


def _prefer(m: re.Match[str]) -> tuple[str, str]:
    return f"prefers {m['rest']}", "preference"


def _rather(m: re.Match[str]) -> tuple[str, str]:
    return f"would rather {m['rest']}", "preference"


def _always(m: re.Match[str]) -> tuple[str, str]:
    return f"{m['word'].lower()} {m['rest']}", "preference"


def _my(m: re.Match[str]) -> tuple[str, str]:
    thing = m["thing"].lower()
    category = "contact" if set(thing.split()) & CONTACT_WORDS else "background"
    return f"user's {thing} is {m['rest']}", category


def _decided(m: re.Match[str]) -> tuple[str, str]:
    return f"{m['verb'].lower()} {m['rest']}", "decision"


Rule = tuple[re.Pattern[str], Callable[[re.Match[str]], tuple[str, str]]]
RULES: tuple[Rule, ...] = (
    (re.compile(_LEAD + r"i\s+(?:really\s+|generally\s+|usually\s+)?prefer\s+(?P<rest>.+)",
                re.I), _prefer),
    (re.compile(_LEAD + r"i(?:'d|’d|\s+would)\s+(?:much\s+)?rather\s+(?P<rest>.+)", re.I),
     _rather),
    (re.compile(r"(?:^|\b(?:please|and|but|so|i|we|you|should)\s+)(?P<word>always|never)\s+"
                r"(?P<rest>\w.+)", re.I), _always),
    (re.compile(r"(?:^|\b(?:and|but|so|also|btw)\s+)my\s+(?P<thing>[\w-]+(?:\s+[\w-]+)?)\s+"
                r"(?:is|are)\s+(?P<rest>.+)", re.I), _my),
    (re.compile(r"\bwe(?:'ve|\s+have)?\s+(?P<verb>decided|picked|chose)\s+(?P<rest>.+)", re.I),
     _decided),
)


def _tidy(text: str) -> str:
    text = " ".join(text.split()).rstrip(" .;!,")
    return text[:1].lower() + text[1:] if text[:2] != text[:2].upper() else text


def statements(text: str) -> list[tuple[str, str]]:
    """The facts (text, category) the rules find in one message of the user's."""
    found: list[tuple[str, str]] = []
    for sentence in _SENTENCES.findall(text):
        sentence = sentence.strip()
        if not sentence or sentence.endswith("?") or len(sentence.split()) > MAX_WORDS:
            continue
        for pattern, make in RULES:
            match = pattern.search(sentence)
            if match is not None and match["rest"].strip(" .;!,"):
                fact, category = make(match)
                found.append((_tidy(fact), category))
                break
    return found


def extract_rules(messages: Sequence[tuple[int | None, str, str]]) -> list[Candidate]:
    """Facts in the user's messages (``(turn, role, text)``, oldest first): explicit
    statements only, each once, in order."""
    seen: set[str] = set()
    out: list[Candidate] = []
    for turn, role, text in messages:
        if role != "user":
            continue
        for fact, category in statements(text):
            key = fact.casefold()
            if key not in seen:
                seen.add(key)
                out.append(Candidate(fact, category, RULE_CONFIDENCE, turn))
    return out
