"""How much of a long conversation reaches the model through rollchat, on LoCoMo (Maharana et
al., ACL 2024): each conversation lived through rollchat (bench/locomo_live.py), each question
asked five ways, scored per LoCoMo category:

  full      one long session holding the whole conversation (history: all, no compaction)
  chain     a new session resuming the chain of LoCoMo sessions: the restored summary only
  memory    the same with memory on (the remembered facts and the per-turn date block)
  tools     the same plus what the archive and memory_search tools return for the question
  relevant  one long session with `history: relevant` and automatic compaction (--long-window)

(a) answer reach, model-free: the share of questions whose gold answer's content words are
all in what the model is sent besides the question (LoCoMo's F1 normalization, Porter stems),
and whose evidence lines each have half their key words there; and the tokens sent.
(b) with --base-url/--model (any OpenAI-compatible server): the model's answers scored by
LoCoMo's token F1 per category as task_eval/evaluation.py computes it.

The data is CC BY-NC 4.0 and never in this repository: download data/locomo10.json from
https://github.com/snap-research/LoCoMo and pass it with --data.

Run: .venv/bin/python bench/bench_locomo.py --data locomo10.json [--conversations 1-7]
     [--work DIR] [--modes full,chain,memory,tools,relevant] [--questions N]
     [--base-url URL --model NAME [--provider openai]]
Resumable: each conversation's chain and each mode's answers are kept in --work (default
.locomo-work); a second run with the same --work skips what is done.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from functools import lru_cache
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.locomo_data import (
    CATEGORIES,
    Conversation,
    DataError,
    Question,
    answer_reached,
    evidence_reached,
    key_words,
    line_frequency,
    load,
    score_answer,
    vocabulary,
)
from bench.locomo_live import (
    Chat,
    Clock,
    Partner,
    after,
    ask_alone,
    live,
    live_chain,
    open_memory,
    question_session,
    question_text,
    tool_queries,
)

from rollchat.memory.layers import TIME_STEP
from rollchat.models.tokens import TokenCounter
from rollchat.providers.base import Provider
from rollchat.providers.offline import OfflineProvider
from rollchat.storage.store import SessionStore

MODES = ("full", "chain", "memory", "tools", "relevant")
CHAIN_DONE = "chain.json"
QUESTION_STEP = TIME_STEP + timedelta(minutes=1)


@dataclass
class Run:
    """One run's settings and its shared objects."""

    work: Path
    modes: tuple[str, ...]
    long_window: int
    questions: int | None
    answerer: Provider | None
    counter: TokenCounter
    say: Callable[[str], None]


def _row(question: Question, conv: Conversation, context: Sequence[str], tokens: int,
         answer: str | None, frequency: Any) -> dict[str, Any]:
    sent = frozenset().union(*(_words(part) for part in context))
    lines = [conv.line(e) for e in question.evidence]
    keys = [key_words(line, frequency) for line in lines if line is not None]
    row: dict[str, Any] = {"i": question.index, "cat": question.category,
                           "answer_reach": answer_reached(question, sent),
                           "evidence_reach": evidence_reached(keys, sent), "tokens": tokens}
    if answer is not None:
        row["answer"] = answer
        row["f1"] = score_answer(question, answer)
    return row


@lru_cache(maxsize=4096)
def _words(text: str) -> frozenset[str]:
    """``vocabulary``, once per text: each question resends most of the same messages."""
    return vocabulary(text)


class Results:
    """The rows of one conversation and mode, appended as they come (the resumable part)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.rows: dict[int, dict[str, Any]] = {}
        if path.exists():
            raw = path.read_text(encoding="utf-8")
            if raw and not raw.endswith("\n"):  # a line cut by a crash: dropped, asked again
                raw = raw[:raw.rfind("\n") + 1]
                path.write_text(raw, encoding="utf-8")
            for line in raw.splitlines():
                try:
                    row = json.loads(line)
                except json.JSONDecodeError:
                    continue  # a line cut by a crash: that question is asked again
                self.rows[int(row["i"])] = row

    def add(self, row: dict[str, Any]) -> None:
        self.rows[row["i"]] = row
        with self.path.open("a", encoding="utf-8") as out:
            out.write(json.dumps(row) + "\n")


def _chain(conv: Conversation, run: Run, partner: Partner) -> tuple[Chat, str]:
    """The conversation's chain, lived now or found done in the work directory."""
    where = run.work / conv.sample_id / "chain"
    marker = where / CHAIN_DONE
    done = json.loads(marker.read_text()) if marker.exists() else None
    if done is None and where.exists():
        shutil.rmtree(where)  # a chain cut short: lived again from the start
    where.mkdir(parents=True, exist_ok=True)
    chat = Chat(conv, partner, Clock(), SessionStore(where / "sessions"),
                memory=open_memory(where))
    if done is not None:
        return chat, str(done["last"])
    started = time.monotonic()
    last = live_chain(chat, lambda step: run.say(f"{conv.sample_id} chain: {step}"))
    marker.write_text(json.dumps({"last": last}))
    run.say(f"{conv.sample_id} chain lived in {time.monotonic() - started:.0f}s")
    return chat, last


def _todo(conv: Conversation, run: Run, results: Results) -> list[Question]:
    wanted = conv.questions if run.questions is None else conv.questions[:run.questions]
    return [q for q in wanted if q.index not in results.rows]


def _chain_modes(conv: Conversation, run: Run, partner: Partner, frequency: Any) -> None:
    """The chain's questions: for each mode one session resumed from the chain's last (a
    fork), each question asked in it as it was right after the resume (``ask_alone``)."""
    chat, last = _chain(conv, run, partner)
    when = after(conv.sittings)
    plain = Chat(conv, partner, chat.clock, chat.store)  # the same chain, memory off
    for mode in ("chain", "memory", "tools"):
        if mode not in run.modes:
            continue
        results = Results(run.work / conv.sample_id / f"{mode}.jsonl")
        todo = _todo(conv, run, results)
        if not todo:
            continue
        # without a model the tools' results are added to the memory session's request
        also = None
        if mode == "memory" and "tools" in run.modes and run.answerer is None:
            also = Results(run.work / conv.sample_id / "tools.jsonl")
        session = question_session(plain if mode == "chain" else chat, last, when)
        partner.tools_allowed = mode == "tools"
        try:
            for n, q in enumerate(todo, 1):
                calls = tool_queries(q, conv) if mode == "tools" and run.answerer is None \
                    else ()
                asked = ask_alone(session, chat, question_text(q, q.index), run.counter, calls)
                results.add(_row(q, conv, asked.context, asked.tokens, _answer(run, asked),
                                 frequency))
                if also is not None and q.index not in also.rows:
                    more = ask_tools(session, q, conv, run, asked)
                    also.add(_row(q, conv, more[0], more[1], None, frequency))
                if n % 50 == 0 or n == len(todo):
                    run.say(f"{conv.sample_id} {mode}: {n}/{len(todo)} questions")
        finally:
            session.state.close()


def ask_tools(session: Any, q: Question, conv: Conversation, run: Run,
              asked: Any) -> tuple[tuple[str, ...], int]:
    """The memory session's request plus what its tools return for ``q``."""
    tools = session.engine.saved()[1]
    results = [str(tools[name].run(args)) for name, args in tool_queries(q, conv)
               if name in tools]
    return ((*asked.context, *results),
            asked.tokens + sum(run.counter.count_text(r) for r in results))


def _answer(run: Run, asked: Any) -> str | None:
    return asked.answer if run.answerer is not None else None


def _long_mode(conv: Conversation, run: Run, partner: Partner, mode: str,
               frequency: Any) -> None:
    """One long session (``full``: all history, no compaction; ``relevant``: relevant history,
    automatic compaction in --long-window), its questions asked at the end, each in the
    context as it was before the question (so no question sees another)."""
    results = Results(run.work / conv.sample_id / f"{mode}.jsonl")
    todo = _todo(conv, run, results)
    if not todo:
        return
    where = run.work / conv.sample_id / mode
    shutil.rmtree(where, ignore_errors=True)
    relevant = mode == "relevant"
    chat = Chat(conv, partner, Clock(), SessionStore(where / "sessions"),
                memory=open_memory(where), history="relevant" if relevant else "all",
                window=run.long_window if relevant else 128_000, auto=relevant)
    session = chat.session()
    started = time.monotonic()
    compactions = sum(live(chat, session, sitting) for sitting in conv.sittings)
    assert chat.memory is not None
    chat.memory.wait(60.0)  # the extractions of its compactions
    run.say(f"{conv.sample_id} {mode}: lived in {time.monotonic() - started:.0f}s, "
            f"{compactions} automatic compactions")
    chat.clock.at = after(conv.sittings)
    partner.tools_allowed = False
    for n, q in enumerate(todo, 1):
        chat.clock.at += QUESTION_STEP  # the date block is told again at each question
        asked = ask_alone(session, chat, question_text(q, q.index), run.counter)
        results.add(_row(q, conv, asked.context, asked.tokens, _answer(run, asked), frequency))
        if n % 50 == 0 or n == len(todo):
            run.say(f"{conv.sample_id} {mode}: {n}/{len(todo)} questions")
    session.state.close()


# ---------------------------------------------------------------- the report


def _pct(values: Sequence[bool | None]) -> str:
    known = [v for v in values if v is not None]
    return f"{100 * sum(known) / len(known):.1f}%" if known else "-"


def report(rows: dict[str, list[dict[str, Any]]], model: bool) -> str:
    """Per mode and category: questions, answer reach, evidence reach, both, mean tokens
    sent (and the model's LoCoMo F1)."""
    head = "| mode | category | questions | answer reach | evidence reach | both | tokens sent |"
    rule = "| --- | --- | --- | --- | --- | --- | --- |"
    if model:
        head, rule = head + " F1 |", rule + " --- |"
    out = [head, rule]
    for mode in MODES:
        got = rows.get(mode, [])
        if not got:
            continue
        groups = [(CATEGORIES[c], [r for r in got if r["cat"] == c]) for c in CATEGORIES]
        for name, group in [*groups, ("all", got)]:
            if not group:
                continue
            both = [None if r["evidence_reach"] is None and r["answer_reach"] is None else
                    bool(r["answer_reach"] in (True, None) and r["evidence_reach"] in
                         (True, None)) for r in group]
            tokens = sum(r["tokens"] for r in group) / len(group)
            line = (f"| {mode} | {name} | {len(group)} | "
                    f"{_pct([r['answer_reach'] for r in group])} | "
                    f"{_pct([r['evidence_reach'] for r in group])} | {_pct(both)} | "
                    f"{tokens:,.0f} |")
            if model:
                scored = [r["f1"] for r in group if "f1" in r]
                line += f" {sum(scored) / len(scored):.3f} |" if scored else " - |"
            out.append(line)
    return "\n".join(out)


def _pick(spec: str, count: int) -> list[int]:
    """``1-7``, ``8,9,10``, ``all``: 0-based indices of the conversations."""
    if spec == "all":
        return list(range(count))
    picked: list[int] = []
    for part in spec.split(","):
        low, _, high = part.partition("-")
        try:
            first, last = int(low), int(high or low)
        except ValueError:
            raise DataError(f"--conversations: {part!r} is not N or N-M") from None
        if not 1 <= first <= last <= count:
            raise DataError(f"--conversations: {part!r} is outside 1-{count}")
        picked += range(first - 1, last)
    return list(dict.fromkeys(picked))


def _answerer(args: argparse.Namespace) -> Provider | None:
    if args.model is None and args.base_url is None:
        return None
    from rollchat import providers
    from rollchat.config.settings import AgentConfig, Config
    from rollchat.errors import RollchatError

    agent = AgentConfig(key="locomo", provider=args.provider, model=args.model,
                        base_url=args.base_url)
    try:
        providers.check_provider(args.provider, agent, os.environ)
        return providers.build_provider(args.provider, agent, Config(agents={"locomo": agent}),
                                        os.environ)
    except RollchatError as error:
        raise DataError(f"the model: {error}") from error


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, required=True, help="LoCoMo's locomo10.json")
    parser.add_argument("--work", type=Path, default=Path(".locomo-work"))
    parser.add_argument("--conversations", default="all", help="e.g. 1-7, 8-10, all")
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--questions", type=int, help="the first N of each conversation")
    parser.add_argument("--long-window", type=int, default=16_000,
                        help="the window of the relevant-history session (tokens)")
    parser.add_argument("--provider", default="openai")
    parser.add_argument("--model")
    parser.add_argument("--base-url")
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)
    modes = tuple(m for m in args.modes.split(",") if m)
    try:
        unknown = [m for m in modes if m not in MODES]
        if unknown:
            raise DataError(f"unknown mode {unknown[0]!r} (modes: {', '.join(MODES)})")
        conversations = load(args.data)
        picked = [conversations[i] for i in _pick(args.conversations, len(conversations))]
        answerer = _answerer(args)
    except DataError as error:
        print(f"bench_locomo: {error}", file=sys.stderr)
        return 2
    # a model's answers and the offline reach are kept apart
    work = args.work / (f"model-{_slug(args.model or 'default')}" if answerer else "offline")
    started = time.monotonic()

    def say(text: str) -> None:
        if not args.quiet:
            print(f"[{time.monotonic() - started:6.0f}s] {text}", file=sys.stderr, flush=True)

    run = Run(work, modes, args.long_window, args.questions, answerer,
              TokenCounter("offline"), say)
    rows = run_all(picked, run)
    model = answerer is not None
    print(f"LoCoMo through rollchat: {len(picked)} conversations "
          f"({', '.join(c.sample_id for c in picked)}), "
          f"{sum(len(r) for r in rows.values()) // max(len(rows), 1)} questions per mode; "
          f"summaries and memory by the offline model; "
          + (f"answers by {args.model} at {args.base_url or args.provider}."
             if model else "no model: (b), the answers' F1, needs --base-url/--model.")
          + f" {time.monotonic() - started:.0f}s.\n")
    print(report(rows, model))
    return 0


def _slug(text: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-._" else "_" for ch in text)[:60]


def run_all(picked: Sequence[Conversation], run: Run) -> dict[str, list[dict[str, Any]]]:
    """Every mode of every picked conversation (what is done in --work is skipped)."""
    offline = OfflineProvider()
    for conv in picked:
        (run.work / conv.sample_id).mkdir(parents=True, exist_ok=True)
        partner = Partner(offline, run.answerer)
        frequency = line_frequency(line for s in conv.sittings for line in s.lines)
        if any(m in run.modes for m in ("chain", "memory", "tools")):
            _chain_modes(conv, run, partner, frequency)
        for mode in ("full", "relevant"):
            if mode in run.modes:
                _long_mode(conv, run, partner, mode, frequency)
    rows: dict[str, list[dict[str, Any]]] = {}
    for mode in run.modes:
        for conv in picked:
            wanted = {q.index for q in (conv.questions if run.questions is None
                                        else conv.questions[:run.questions])}
            got = Results(run.work / conv.sample_id / f"{mode}.jsonl").rows
            rows.setdefault(mode, []).extend(r for i, r in sorted(got.items()) if i in wanted)
    return rows


if __name__ == "__main__":
    sys.exit(main())
