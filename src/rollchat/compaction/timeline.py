"""A summary's Timeline: on which day the session's topics happened, one item a day ("2023-05-08:
<what>", oldest first), carried down the chain and fitted to its share of the word budget."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import date

from rollchat.text import named
from rollchat.text.phrases import clean_item, item_key

# The Timeline holds at most 1/SHARE of a summary's words; past it the oldest days go first.
SHARE = 4
DAY_LABELS = 3  # what happened on a day: at most this many of its topics
LABEL_WORDS = 7  # each cut to this many words
SEPARATOR = "; "
_DAY = re.compile(r"^(\d{4}-\d{2}-\d{2}):[ \t]*(.*)$", re.DOTALL)


def day_items(topics: Sequence[str], days: Mapping[str, date]) -> list[str]:
    """One item per day that ``topics`` (most recent first) happened on (``days``: a topic's
    day), oldest day first, each naming at most DAY_LABELS of that day's topics, cut to
    LABEL_WORDS words (those naming something first, then those saying the most, then the
    most recent)."""
    by_day: dict[date, list[str]] = {}
    for topic in topics:
        if topic in days:
            by_day.setdefault(days[topic], []).append(topic)
    items: list[str] = []
    for day in sorted(by_day):
        cut = {t: clean_item(t, LABEL_WORDS).rstrip(" .!?;:") for t in by_day[day]}
        ranked = sorted(by_day[day], key=lambda t: (not named.has_named(t),
                                                    -len(named.content_words(cut[t]))))
        labels = [cut[t] for t in ranked[:DAY_LABELS] if cut[t]]
        if labels:
            items.append(f"{day.isoformat()}: {SEPARATOR.join(labels)}")
    return items


def _labels(text: str) -> list[str]:
    return [label.strip() for label in text.split(SEPARATOR) if label.strip()]


def merge(groups: Iterable[Sequence[str]]) -> list[str]:
    """The items of ``groups`` (each oldest first; later groups are later sessions), one per
    day: a day's items merged (its later labels first, near-duplicates once, DAY_LABELS at
    most), dated items in date order; an item a model wrote without a leading ISO date is
    kept as it is, in its place."""
    out: list[str] = []
    at: dict[str, int] = {}  # a day -> its item's index in ``out``
    labels: dict[str, list[str]] = {}
    for group in groups:
        for item in group:
            item = item.strip()
            found = _DAY.match(item)
            if found is None:
                if item and item not in out:
                    out.append(item)
                continue
            day = found[1]
            if day not in at:
                at[day] = len(out)
                out.append(day)
                labels[day] = []
            keys = {item_key(label) for label in labels[day]}
            fresh = [lb for lb in _labels(found[2]) if item_key(lb) not in keys]
            labels[day] = (fresh + labels[day])[:DAY_LABELS]
    for day, index in at.items():
        out[index] = f"{day}: {SEPARATOR.join(labels[day])}" if labels[day] else day
    dated = sorted((out[i] for i in at.values()), key=lambda item: item[:10])
    for index, item in zip(sorted(at.values()), dated, strict=True):
        out[index] = item
    return out


def words(items: Iterable[str]) -> int:
    """Words of ``items`` as a summary counts them (a dash each)."""
    return sum(len(item.split()) + 1 for item in items)


def fit(items: Sequence[str], max_words: int) -> tuple[list[str], int]:
    """``items`` within 1/SHARE of ``max_words`` words: the oldest dropped first, the latest
    always kept; returns them and how many went."""
    kept = list(items)
    room = max_words // SHARE
    while len(kept) > 1 and words(kept) > room:
        kept.pop(0)
    return kept, len(items) - len(kept)
