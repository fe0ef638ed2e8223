"""LoCoMo for bench/bench_locomo.py: the data file read into conversations and questions, and the
scores: LoCoMo's answer normalization and token F1 (ported from task_eval/evaluation.py of
snap-research/LoCoMo, the paper's own evaluation) and the model-free answer and evidence reach.

The data (CC BY-NC 4.0) is never part of this repository: the bench reads it from --data."""

from __future__ import annotations

import json
import re
import string
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from pathlib import Path
from typing import Any

# LoCoMo's categories as its data numbers them (the paper's Table 3 and their evaluation code:
# category 1 answers are lists scored part by part, category 5 is the adversarial one)
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop",
              5: "adversarial"}
NOT_MENTIONED = "Not mentioned in the conversation"
_DATE = re.compile(r"(\d{1,2}):(\d{2})\s*([ap]m)\s+on\s+(\d{1,2})\s+([A-Za-z]+),?\s+(\d{4})", re.I)
_EVIDENCE = re.compile(r"D(\d+):(\d+)")
# words too common to say that an answer or a turn reached the model (beside LoCoMo's own
# normalization, which drops a, an, the and "and")
STOPWORDS = frozenset("""
i me my we our you your he him his she her it its they them their this that these those is
am are was were be been being have has had do does did to of in on at by for with from as or
but if so not no yes can could would should will just also very really too about into over
than then there here what which who whom when where why how all any some such one s t don
own out up down off again further once more most other same only both each few nor
""".split())  # noqa: SIM905


_ISO_DATE = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August",
           "September", "October", "November", "December")
_NO_PUNCTUATION = str.maketrans("", "", string.punctuation)


class DataError(ValueError):
    """The --data file is not LoCoMo-shaped (the message says where)."""


@dataclass(frozen=True)
class Line:
    """One dialog turn of LoCoMo: its id (``D3:7``), speaker and text (a shared image as the
    caption LoCoMo's own prompts give it)."""

    dia_id: str
    speaker: str
    text: str


@dataclass(frozen=True)
class Sitting:
    """One LoCoMo session: its number, its date as given and as a time, its lines."""

    number: int
    date_text: str
    date: datetime
    lines: tuple[Line, ...]


@dataclass(frozen=True)
class Question:
    index: int
    question: str
    answer: str  # NOT_MENTIONED for category 5 (the adversarial answer is a distractor)
    category: int
    evidence: tuple[str, ...]
    distractor: str = ""  # category 5: the wrong answer the question invites


@dataclass(frozen=True)
class Conversation:
    sample_id: str
    speaker_a: str
    speaker_b: str
    sittings: tuple[Sitting, ...]
    questions: tuple[Question, ...]

    def line(self, dia_id: str) -> Line | None:
        return _lines(self).get(dia_id)


@lru_cache(maxsize=32)
def _lines(conversation: Conversation) -> dict[str, Line]:
    return {line.dia_id: line for s in conversation.sittings for line in s.lines}


def parse_date(text: str) -> datetime:
    """LoCoMo's session date (``1:56 pm on 8 May, 2023``) as a naive local time."""
    match = _DATE.search(text)
    if match is None:
        raise DataError(f"unreadable session date {text!r}")
    hour, minute, half, day, month, year = match.groups()
    clock = datetime.strptime(f"{int(hour)}:{minute} {half.upper()}", "%I:%M %p")
    try:
        day_of = datetime.strptime(f"{int(day)} {month[:3].title()} {year}", "%d %b %Y")
    except ValueError as error:
        raise DataError(f"unreadable session date {text!r}") from error
    return day_of.replace(hour=clock.hour, minute=clock.minute)


def _line(raw: Mapping[str, object], where: str) -> Line:
    try:
        text, speaker, dia_id = str(raw["text"]), str(raw["speaker"]), str(raw["dia_id"])
    except (KeyError, TypeError) as error:
        raise DataError(f"{where}: a turn without {error}") from error
    caption = raw.get("blip_caption")
    if caption:  # as LoCoMo's prompts give a shared image
        text = f"{text} [shares {caption}]"
    return Line(dia_id, speaker, text)


def _sittings(conv: Mapping[str, object], sample: str) -> tuple[Sitting, ...]:
    numbers = sorted(int(k.rsplit("_", 1)[1]) for k in conv
                     if re.fullmatch(r"session_\d+", k))
    out = []
    for n in numbers:
        raw = conv[f"session_{n}"]
        if not isinstance(raw, list) or not raw:
            continue
        date_text = str(conv.get(f"session_{n}_date_time", ""))
        lines = tuple(_line(t, f"{sample} session {n}") for t in raw)
        out.append(Sitting(n, date_text, parse_date(date_text), lines))
    return tuple(out)


def _question(raw: Mapping[str, object], index: int) -> Question:
    category = int(str(raw["category"]))
    if category not in CATEGORIES:
        raise DataError(f"question {index}: unknown category {category}")
    evidence = tuple(f"D{s}:{t}" for item in raw.get("evidence") or ()  # type: ignore[attr-defined]
                     for s, t in _EVIDENCE.findall(str(item)))
    if category == 5:
        return Question(index, str(raw["question"]), NOT_MENTIONED, 5, evidence,
                        str(raw.get("adversarial_answer", raw.get("answer", ""))))
    return Question(index, str(raw["question"]), str(raw["answer"]), category, evidence)


def load(path: Path) -> list[Conversation]:
    """The conversations of a LoCoMo-shaped JSON file; DataError says what is wrong."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise DataError(f"cannot read {path}: {error}") from error
    if not isinstance(data, list):
        raise DataError(f"{path}: expected a list of conversations")
    out = []
    for number, item in enumerate(data, 1):
        try:
            conv, sample = item["conversation"], str(item.get("sample_id", number))
            questions = tuple(_question(q, i) for i, q in enumerate(item["qa"]))
            out.append(Conversation(sample, str(conv["speaker_a"]), str(conv["speaker_b"]),
                                    _sittings(conv, sample), questions))
        except (KeyError, TypeError, AttributeError, ValueError) as error:
            if isinstance(error, DataError):
                raise
            raise DataError(f"{path}: conversation {number}: missing or bad {error}") from error
    return out


# ---------------------------------------------------------------- LoCoMo's scoring


def normalize_answer(text: str) -> str:
    """LoCoMo's normalize_answer: commas dropped, lower case, punctuation removed, the
    articles and "and" removed, whitespace squeezed."""
    text = text.replace(",", "").lower().translate(_NO_PUNCTUATION)
    text = re.sub(r"\b(a|an|the|and)\b", " ", text)
    return " ".join(text.split())


@lru_cache(maxsize=1)
def _porter() -> Any:
    from nltk.stem import PorterStemmer  # type: ignore[import-untyped]  # LoCoMo's stemmer

    return PorterStemmer()


@lru_cache(maxsize=200_000)
def stem(word: str) -> str:
    return str(_porter().stem(word))


def f1_score(prediction: str, truth: str) -> float:
    """LoCoMo's f1_score: token F1 of the stemmed, normalized words."""
    pred = [stem(w) for w in normalize_answer(prediction).split()]
    gold = [stem(w) for w in normalize_answer(truth).split()]
    same = sum((Counter(pred) & Counter(gold)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(pred), same / len(gold)
    return 2 * precision * recall / (precision + recall)


def f1_multi(prediction: str, truth: str) -> float:
    """LoCoMo's f1 for multi-hop answers: each comma-separated gold part scored against its
    best predicted part, averaged."""
    preds = [p.strip() for p in prediction.split(",")]
    golds = [g.strip() for g in truth.split(",")]
    return sum(max(f1_score(p, g) for p in preds) for g in golds) / len(golds)


def gold_of(question: Question) -> str:
    """The gold answer as LoCoMo's evaluation scores it (category 3: before the first ';')."""
    return question.answer.split(";")[0].strip() if question.category == 3 else question.answer


def score_answer(question: Question, output: str) -> float:
    """LoCoMo's eval_question_answering for one answer."""
    if question.category == 5:
        low = output.lower()
        return float("no information available" in low or "not mentioned" in low)
    if question.category == 1:
        return f1_multi(output, gold_of(question))
    return f1_score(output, gold_of(question))


# ---------------------------------------------------------------- model-free reach


def content_words(text: str) -> list[str]:
    """The stemmed words of ``text`` that carry content: LoCoMo's normalization, then
    stemming, without STOPWORDS."""
    return [stem(w) for w in normalize_answer(text).split() if w not in STOPWORDS]


def vocabulary(text: str) -> frozenset[str]:
    """Every stemmed word of ``text`` (what a question's reach is checked against); a date
    written ``2023-05-08`` (as rollchat's date block writes it) also gives its day, month
    name and year, the words a reader takes from it."""
    dates = [f"{int(d)} {_MONTHS[int(m) - 1]} {y}" for y, m, d in _ISO_DATE.findall(text)
             if 1 <= int(m) <= 12]
    return frozenset(stem(w) for w in normalize_answer(" ".join([text, *dates])).split())


def key_words(line: Line, frequency: Mapping[str, int], most: int = 5) -> list[str]:
    """The evidence line's key content: its ``most`` rarest content words in the
    conversation (``frequency``: in how many lines each stemmed word occurs)."""
    words = list(dict.fromkeys(content_words(line.text)))
    return sorted(words, key=lambda w: (frequency.get(w, 0), words.index(w)))[:most]


def line_frequency(lines: Iterable[Line]) -> Counter[str]:
    counts: Counter[str] = Counter()
    for line in lines:
        counts.update(set(content_words(line.text)))
    return counts


def answer_reached(question: Question, sent: frozenset[str]) -> bool | None:
    """Whether every content word of the gold answer is in what was sent (None for the
    adversarial category, whose right answer is that nothing was said)."""
    if question.category == 5:
        return None
    words = content_words(gold_of(question)) or [stem(w) for w in
                                                 normalize_answer(gold_of(question)).split()]
    return all(w in sent for w in words)


def evidence_reached(keys: Sequence[Sequence[str]], sent: frozenset[str]) -> bool | None:
    """Whether each evidence line has at least half of its key words in what was sent (None:
    the question names no evidence line found in the data)."""
    if not keys:
        return None
    return all(sum(w in sent for w in k) * 2 >= len(k) for k in keys)
