"""How much of a task survives compaction: long generated conversations with planted items of
six classes (decisions, pending tasks, preferences, names, numbers with units, paths), in
varied phrasing, with distractors and tasks resolved later, compacted k times (manual), or
automatically in a small window; scored in the summaries and by a probe quiz asked of the
restored agent. Prints a markdown table (the lead records it in bench/RESULTS.md).

Run: .venv/bin/python bench/fidelity.py [--seeds 5] [--compactions 5]
     [--provider openai --model gpt-4o-mini --base-url URL]   (a real model; needs its key)
"""

from __future__ import annotations

import argparse
import os
import random
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.fidelity_data import KINDS, Plant, conversation

from rollchat import providers
from rollchat.config.settings import AgentConfig, Config, SessionConfig, UIConfig
from rollchat.domain import Summary
from rollchat.engine.core import EngineSettings
from rollchat.errors import RollchatError
from rollchat.events import TextDelta
from rollchat.providers.base import Provider, RetryPolicy
from rollchat.session.core import Session
from rollchat.storage.store import InMemoryStore

SYSTEM = "You are a helpful engineering assistant. Answer briefly."


@dataclass
class Score:
    """Kept / planted per class."""

    kept: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    total: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))

    def add(self, kind: str, ok: bool) -> None:
        self.total[kind] += 1
        self.kept[kind] += ok

    def cell(self, kind: str) -> str:
        if not self.total[kind]:
            return "-"
        kept, total = self.kept[kind], self.total[kind]
        return f"{100 * kept / total:.0f}% ({kept}/{total})"


def _sections(summary: Summary, kind: str) -> str:
    if kind == "decision":
        return "\n".join(summary.decisions)
    if kind in ("pending", "resolved"):
        return "\n".join(summary.pending)
    if kind == "preference":
        return "\n".join((*summary.decisions, *summary.pending))
    return "\n".join((summary.background, *summary.topics, *summary.decisions,
                      *summary.pending, *summary.artifacts))


def score_summary(summary: Summary, plants: list[Plant], score: Score) -> None:
    for plant in plants:
        held = plant.token.lower() in _sections(summary, plant.kind).lower()
        score.add(plant.kind, not held if plant.kind == "resolved" else held)


def build(provider: Provider, model: str, window: int, auto: bool,
          store: InMemoryStore | None = None) -> Session:
    agent = AgentConfig(key="bench", name="Bench", provider="offline", system_prompt=SYSTEM,
                        max_output_tokens=512)
    config = Config(agents={"bench": agent},
                    session=replace(SessionConfig(), auto_compact=auto, keep_recent_turns=2))
    engine = EngineSettings(provider, model=model, system=SYSTEM, max_output_tokens=512,
                    temperature=None, retry=RetryPolicy(2, 1.0, 8.0))
    return Session(config=config, agent=agent, engine_settings=engine, summary_provider=provider,
                   summary_model=model, provider_name="bench", store=store or InMemoryStore(),
                   confirm=lambda _q: False, context_window=window)


def drain(flow: object) -> str:
    return "".join(e.text for e in flow if isinstance(e, TextDelta))  # type: ignore[attr-defined]


def quiz(provider: Provider, model: str, store: InMemoryStore, parent: str, plants: list[Plant],
         score: Score) -> None:
    """Ask each question of a new agent restored from the last summary (``resume``), so
    that no answer sees another question; score the planted token in the answer."""
    for plant in plants:
        if plant.kind == "resolved":
            continue
        session = build(provider, model, 128_000, auto=False, store=store)
        drain(session.resume(parent))
        answer = drain(session.turn(plant.question))
        score.add(plant.kind, plant.token.lower() in answer.lower())


def run_manual(provider: Provider, model: str, seed: int, k: int,
               first: Score, last: Score, probes: Score, final: Score) -> None:
    """k segments, a compact after each: segment 1's items scored after compaction 1 and
    (its unresolved open tasks) after compaction k; then the probe quiz."""
    segments = conversation(random.Random(seed), k)
    session = build(provider, model, 128_000, auto=False)
    for index, segment in enumerate(segments):
        for line in segment.lines:
            drain(session.turn(line))
        drain(session.compact())
        summary = session.state.parent_summary
        assert summary is not None
        if index == 0:
            score_summary(summary, segments[0].plants, first)
    assert summary is not None
    open_tasks = [p for p in segments[0].plants if p.kind == "pending"]
    score_summary(summary, open_tasks, last)
    score_summary(summary, [p for s in segments for p in s.plants], final)
    parent = session.state.resumed_from
    assert parent is not None and isinstance(session.store, InMemoryStore)
    quiz(provider, model, session.store, parent, [p for s in segments for p in s.plants], probes)


def run_auto(provider: Provider, model: str, seed: int, k: int, window: int,
             score: Score) -> int:
    """The whole conversation in a small window: automatic compactions only. Scores segment
    1's open tasks in the last summary; returns how many compactions happened."""
    segments = conversation(random.Random(seed), k)
    session = build(provider, model, window, auto=True)
    compactions = 0
    for segment in segments:
        for line in segment.lines:
            events = list(session.turn(line))
            compactions += sum(type(e).__name__ == "CompactionFinished" for e in events)
    summary = session.state.parent_summary
    if summary is not None:
        score_summary(summary, [p for p in segments[0].plants if p.kind == "pending"], score)
    return compactions


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--compactions", type=int, default=5)
    parser.add_argument("--window", type=int, default=6000, help="for the automatic run")
    parser.add_argument("--provider", default="offline")
    parser.add_argument("--model")
    parser.add_argument("--base-url")
    args = parser.parse_args()
    agent = AgentConfig(key="bench", name="Bench", provider=args.provider, model=args.model,
                        base_url=args.base_url)
    name = args.provider
    if name == "auto":
        name, _why = providers.resolve_provider_name(agent, os.environ)
    model = args.model or providers.DEFAULT_MODELS[name]
    config = Config(agents={"bench": agent}, ui=replace(UIConfig(), offline_word_delay=0.0))
    try:
        providers.check_provider(name, agent, os.environ)
        provider = providers.build_provider(name, agent, config, os.environ)
    except RollchatError as error:
        sys.exit(f"fidelity: {error}")
    first, last, probes, auto, final = Score(), Score(), Score(), Score(), Score()
    compactions = 0
    for seed in range(args.seeds):
        run_manual(provider, model, seed, args.compactions, first, last, probes, final)
        compactions += run_auto(provider, model, seed, args.compactions, args.window, auto)
    print(f"Compaction fidelity: {name} ({model}), {args.seeds} conversations, "
          f"{args.compactions} manual compactions each; automatic: window {args.window:,}, "
          f"{compactions} compactions in all.\n")
    print("| class | kept after 1 compact | in the last summary (all sessions) "
          "| probe quiz after the last |")
    print("| --- | --- | --- | --- |")
    for kind in KINDS:
        print(f"| {kind} | {first.cell(kind)} | {final.cell(kind)} | {probes.cell(kind)} |")
    print(f"\nUnresolved open tasks of the first session still pending after "
          f"{args.compactions} compactions: manual {last.cell('pending')}, "
          f"automatic {auto.cell('pending')}.")
    print("(resolved: tasks done later, correctly absent from Pending.)")


if __name__ == "__main__":
    main()
