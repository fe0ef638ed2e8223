"""Long sessions for bench/bench_summary.py and the scale tests: real prompts
(bench/summary_corpus.json, sources noted there) with distinct names, numbers and paths
woven in, open tasks that later turns resolve, decisions, and replies naming files."""

from __future__ import annotations

import json
import random
from datetime import datetime, timezone
from pathlib import Path

from rollchat.domain import Turn, answer_blocks

CORPUS = Path(__file__).with_name("summary_corpus.json")
WHEN = datetime(2026, 11, 25, 12, 0, tzinfo=timezone.utc)
_NOUNS = ("parser", "exporter", "session", "formatter", "cache", "index", "header", "tool",
          "reader", "writer", "picker", "render", "loader", "config", "schema", "queue")
_VERBS = ("update", "rename", "split", "document", "benchmark", "test", "port", "clean up")
_NAMES = ("Priya", "Tomasz", "Mireille", "Kwame", "Ana", "Jun", "Olu", "Sven", "Dana", "Ravi")


def corpus() -> tuple[list[str], list[str]]:
    """The real prompts and reply lines."""
    data = json.loads(CORPUS.read_text(encoding="utf-8"))
    return list(data["prompts"]), list(data["replies"])


def _task(i: int) -> str:
    rng = random.Random(i)
    return f"{rng.choice(_VERBS)} the {rng.choice(_NOUNS)} {i} module"


def long_session(count: int, seed: int = 0) -> list[Turn]:
    """``count`` turns: each a real prompt and a sentence naming something new, two real reply
    lines and one naming a file; every 5th an open task (a third of them resolved 40 turns
    later), every 7th a decision."""
    rng = random.Random(seed)
    real, lines = corpus()
    turns: list[Turn] = []
    for i in range(count):
        noun = rng.choice(_NOUNS)
        parts = [rng.choice(real),
                 f"The {noun} code for step {i} is in src/{noun}/part_{i}.py, about {i % 97 + 3} "
                 f"lines."]
        if i % 5 == 0:
            parts.append(f"We still need to {_task(i)}.")
        if i % 7 == 0:
            parts.append(f"Let's go with {rng.choice(_NAMES)}'s plan {i} for the {noun}.")
        if i % 15 == 10 and i >= 40:
            parts.append(f"Good news: {_task(i - 40)} is done.")
        reply = (f"{rng.choice(lines)}\n{rng.choice(lines)}\nI'll read src/{noun}/part_{i}.py "
                 f"first.")
        if i % 13 == 0:
            reply += f" The {noun} {i} change is small; we should use `{noun}_{i}` for it."
        turns.append(Turn("query", i + 1, WHEN, " ".join(parts), answer_blocks(reply)))
    return turns
