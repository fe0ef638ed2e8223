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
# a sentence ends at a full stop, a "!", a "?" or a ";" followed by a space (or the end), or
# at a line's end: a full stop inside a name, an address or a version ("bob@example.com",
# "python 3.12", "node.js") ends nothing
_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+")
# nor does the full stop of an abbreviation or an initial ("e.g. vim", "Dr. Ana", "J. Smith")
_ABBREVIATION = re.compile(r"(?:\b(?i:e\.g|i\.e|etc|vs|approx|incl|dr|mr|mrs|ms|prof|jr|sr)"
                           r"|\b[A-Z])\.\Z")
# what the user quotes or pastes rather than states: code blocks (fenced, indented), quoted
# lines ("> ...") and quotations ("...", “...”); inline `code` stays (a name in a sentence)
_QUOTED = re.compile(r"```.*?(?:```|\Z)|~~~.*?(?:~~~|\Z)|^(?:>|    |\t).*$|"
                     r'"[^"\n]*"|“[^”\n]*”', re.S | re.M)
# "I never said that", "I always got an error": what happened, not a habit or a preference
_PAST = re.compile(r"(?:(?!(?:embed|shed|bed|red|wed)\b)\w*[^e\W]ed|said|got|saw|told|did|"
                   r"had|was|were|knew|thought|meant|made|went|heard|found|wrote|asked|came|gave|took|ran|sent|left|put|read|forgot|"
                   r"understood|became|began|kept|lost|paid|won|been)\b", re.I)
# "my question is ...", "my point is ...": talk about the conversation, not about the user
_MY_TALK = frozenset((
    "question", "point", "guess", "problem", "issue", "concern", "bad", "fault", "mistake",
    "answer", "code", "output", "error", "understanding", "impression", "feeling", "take",
    "thought", "thoughts", "worry", "request", "suggestion", "idea", "reply", "message",
    "test", "tests", "result", "results", "log", "logs", "input", "attempt", "fix", "change",
    "script", "function", "query", "first", "last", "next", "second", "only",
))
_LEAD = r"(?:^|\b(?:and|but|so|also|please|really|actually|generally|usually|just)\s+)"


@dataclass(frozen=True)
class FoundFact:
    """A fact found in the conversation (by the model or by a rule), not yet stored."""

    text: str
    category: str
    confidence: float
    turn: int | None = None


def _prefer(m: re.Match[str]) -> tuple[str, str]:
    return f"prefers {m['rest']}", "preference"


def _rather(m: re.Match[str]) -> tuple[str, str]:
    return f"would rather {m['rest']}", "preference"


def _always(m: re.Match[str]) -> tuple[str, str] | None:
    if _PAST.match(m["rest"]):
        return None
    return f"{m['word'].lower()} {m['rest']}", "preference"


def _my(m: re.Match[str]) -> tuple[str, str] | None:
    thing = m["thing"].lower()
    if thing.split()[0] in _MY_TALK:
        return None
    category = "contact" if set(thing.split()) & CONTACT_WORDS else "background"
    return f"user's {thing} is {m['rest']}", category


def _decided(m: re.Match[str]) -> tuple[str, str]:
    return f"{m['verb'].lower()} {m['rest']}", "decision"


Rule = tuple[re.Pattern[str], Callable[[re.Match[str]], tuple[str, str] | None]]
RULES: tuple[Rule, ...] = (
    (re.compile(_LEAD + r"i\s+(?:really\s+|generally\s+|usually\s+)?prefer\s+(?P<rest>.+)",
                re.I), _prefer),
    (re.compile(_LEAD + r"i(?:'d|’d|\s+would)\s+(?:much\s+)?rather\s+(?P<rest>.+)", re.I),
     _rather),
    (re.compile(r"(?:^|\b(?:please|and|but|so|i|we|should)\s+)(?P<word>always|never)\s+"
                r"(?P<rest>\w.+)", re.I), _always),
    (re.compile(r"(?:^|\b(?:and|but|so|also|btw)\s+)my\s+(?P<thing>[\w-]+(?:\s+[\w-]+)?)\s+"
                r"(?:is|are)\s+(?P<rest>.+)", re.I), _my),
    (re.compile(r"\bwe(?:'ve|\s+have)?\s+(?P<verb>decided|picked|chose)\s+(?P<rest>.+)", re.I),
     _decided),
)


def _tidy(text: str) -> str:
    text = " ".join(text.split()).rstrip(" .;!,")
    return text[:1].lower() + text[1:] if text[:2] != text[:2].upper() else text


def quoted_removed(text: str) -> str:
    """A message of the user's without what it quotes or pastes: code, quoted lines and
    quotations (each left as " … ")."""
    return _QUOTED.sub(" … ", text)


def sentences(text: str) -> list[str]:
    """The sentences of ``text`` (see _SENTENCE_END)."""
    out: list[str] = []
    for line in text.split("\n"):
        joined = False  # the last piece ended in an abbreviation: this one goes on with it
        for piece in _SENTENCE_END.split(line):
            if joined:
                out[-1] += " " + piece
            elif piece.strip():
                out.append(piece)
            joined = bool(out) and bool(_ABBREVIATION.search(out[-1]))
    return out


def statements(text: str) -> list[tuple[str, str]]:
    """The facts (text, category) the rules find in one message of the user's: in what they
    write themselves, not in the code, the quoted lines or the quotations it holds."""
    found: list[tuple[str, str]] = []
    for sentence in sentences(quoted_removed(text)):
        sentence = sentence.strip()
        if not sentence or sentence.endswith("?") or len(sentence.split()) > MAX_WORDS:
            continue
        for pattern, make in RULES:
            match = pattern.search(sentence)
            made = make(match) if match is not None and match["rest"].strip(" .;!,") \
                else None
            if made is not None:
                found.append((_tidy(made[0]), made[1]))
                break
    return found


def extract_rules(messages: Sequence[tuple[int | None, str, str]]) -> list[FoundFact]:
    """Facts in the user's messages (``(turn, role, text)``, oldest first): explicit
    statements only, each once, in order."""
    seen: set[str] = set()
    out: list[FoundFact] = []
    for turn, role, text in messages:
        if role != "user":
            continue
        for fact, category in statements(text):
            key = fact.casefold()
            if key not in seen:
                seen.add(key)
                out.append(FoundFact(fact, category, RULE_CONFIDENCE, turn))
    return out
