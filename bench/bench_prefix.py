"""How much of each request repeats the previous request, in a scripted tool-heavy session.

A Session talks to the local wire-format servers of tests/wire_servers.py (counting mode: every
prompt is counted with cl100k and a window is enforced); the scripted model calls one to three
tools per turn (a file read, a test run whose failure is at the end of its log, a grep) before
it answers, so tool results arrive all the time, and automatic compaction runs a few times.
Every request body the server received is kept. For each chat request that follows another
chat request with no compaction in between, the share of its input (tools, system prompt,
messages, serialized as sent; Anthropic cache_control markers ignored) that is byte for byte
the start of the previous request is what a provider's prompt cache can reuse.

``--memory`` runs each dialect twice, side by side: without memory, and with the memory layers
of issue 16 (a user profile in the system prompt and, in every user message, a context block
with the date and time and the facts most relevant to it, from a store of 60 facts; the clock
moves a minute per turn, so every block differs from the one before).

Run: .venv/bin/python bench/bench_prefix.py [--turns 60] [--window 32000] [--memory]
     [--dialect openai]
     (from the repository root; PYTHONPATH=/path/to/other/tree/src:/path/to/other/tree measures
     another tree with the same script)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.compaction.test_autocompact import summary_text
from tests.compaction.test_autocompact_wire import is_summary, start, system_of
from tests.wire_servers import (
    AnthropicDialect,
    OpenAIDialect,
    Reply,
    WireServer,
    last_user_text,
    text,
    tool,
    tool_pairing_error,
)

from rollchat.memory.layers import MemoryLayers, split_block
from rollchat.memory.search import rank
from rollchat.providers.base import ToolSpec
from rollchat.tools import Tool

FILES = ("billing/api/handlers.py", "billing/retry.py", "billing/models.py",
         "billing/tests/test_refunds.py", "billing/migrations/0042_ledger.py")


def read_file(arguments: Mapping[str, object]) -> str:
    """A source file of 60 to 260 lines (deterministic from the path and turn)."""
    path = str(arguments.get("path"))
    turn = int(str(arguments.get("turn", 0)))
    lines = 60 + (turn * 37) % 200
    return "\n".join(f"{n:4d}  def step_{n}(invoice, retries={n % 5}):  # {path}"
                     for n in range(lines))


def run_tests(arguments: Mapping[str, object]) -> str:
    """A test run's log: passing tests, then the failure and its traceback at the end."""
    turn = int(str(arguments.get("turn", 0)))
    passed = [f"billing/tests/test_case_{n}.py::test_{n} PASSED" for n in range(80 + turn % 40)]
    failure = ["FAILED billing/tests/test_refunds.py::test_partial - AssertionError",
               "    assert cents(10.005) == 1001", "E   assert 1000 == 1001",
               f"=== 1 failed, {len(passed)} passed in 3.{turn % 10}s ==="]
    return "\n".join(passed + failure)


def grep(arguments: Mapping[str, object]) -> str:
    word = str(arguments.get("pattern"))
    return "\n".join(f"{FILES[n % len(FILES)]}:{10 + n * 7}: {word} = compute({n})"
                     for n in range(8))


TOOLS = {
    "read_file": (read_file, "Read a file of the repository."),
    "run_tests": (run_tests, "Run the test suite and return its log."),
    "grep": (grep, "Search the repository for a pattern."),
}


def plan_for(turn: int) -> list[tuple[str, dict[str, Any]]]:
    """The tool calls the model makes in turn ``turn``, one per round."""
    calls: list[tuple[str, dict[str, Any]]] = [
        ("read_file", {"path": FILES[turn % len(FILES)], "turn": turn})]
    if turn % 2:
        calls.append(("run_tests", {"turn": turn}))
    if turn % 3 == 0:
        calls.append(("grep", {"pattern": f"retry_{turn}"}))
    return calls


@dataclass(frozen=True)
class Fact:
    id: int
    text: str
    category: str
    scope: str
    source_session: str | None
    source_turn: int | None


SUBJECTS = ("refund", "invoice", "retry", "ledger", "rounding", "migration", "webhook", "tax",
            "currency", "report")


def facts() -> list[Fact]:
    """60 remembered facts: 8 about the user (the profile), the rest about the project."""
    out = [Fact(n + 1, f"The user prefers {what}", "preference", "user",
                "rollo_20261101_090000_0001", n + 1)
           for n, what in enumerate(("tabs over spaces", "short answers", "Decimal for money",
                                     "pytest over unittest", "type hints everywhere",
                                     "small commits", "British spelling", "no emojis"))]
    out += [Fact(n + 100, f"The {SUBJECTS[n % len(SUBJECTS)]} code in billing/"
                          f"{SUBJECTS[(n * 3) % len(SUBJECTS)]}.py was changed in sprint {n} "
                          f"to handle case {n * 7}", "fact", "project",
                 f"rollo_202611{n % 28 + 1:02d}_100000_00{n % 90 + 10}", n % 9 + 1)
            for n in range(52)]
    return out


@dataclass
class Facts:
    """The fact store of the run: BM25 (FTS5) over the facts' text."""

    items: list[Fact]

    def facts(self) -> list[Fact]:
        return self.items

    def relevant(self, query: str, k: int = 5) -> list[Fact]:
        return [self.items[i] for i in rank([f.text for f in self.items], query, k)]

    def mark_used(self, ids: object) -> None:
        pass


class Clock:
    """A minute later at each call."""

    def __init__(self) -> None:
        self.now = datetime(2026, 11, 23, 9, 0, tzinfo=timezone(timedelta(hours=1), "CET"))

    def __call__(self) -> datetime:
        self.now += timedelta(minutes=1)
        return self.now


def turn_of(content: str) -> int | None:
    user = split_block(content)[1]
    if user.startswith("[") and "]" in user:
        head = user[1:user.index("]")]
        return int(head) if head.isdigit() else None
    return None


def results_since_user(body: dict[str, Any]) -> int:
    """Tool results after the last user text message (either dialect)."""
    count = 0
    for message in reversed(body.get("messages") or []):
        content = message.get("content")
        if message.get("role") == "tool":
            count += 1
            continue
        if isinstance(content, list) and any(b.get("type") == "tool_result" for b in content):
            count += sum(1 for b in content if b.get("type") == "tool_result")
            if any(b.get("type") == "text" for b in content):
                break
            continue
        if message.get("role") == "user":
            break
    return count


@dataclass
class Model:
    """The scripted model: tools first (unless ``calls_tools`` is off: a plain chat), then a
    short answer; valid summaries."""

    calls_tools: bool = True

    def __call__(self, body: dict[str, Any]) -> Reply:
        if is_summary(body):
            return text(summary_text(120, marker="summarized"))
        user = last_user_text(body)
        if user.startswith("CONTEXT RESTORATION"):
            return text("Restored the summary: invoices, retries, tests. Ready to continue.")
        turn = turn_of(user)
        if turn is None:
            return text("ok")
        done = results_since_user(body)
        plan = plan_for(turn) if self.calls_tools else []
        if done < len(plan):
            name, args = plan[done]
            return tool(name, args, tool_id=f"call_{turn}_{done}")
        return text(f"Turn {turn}: the failure is in cents(); rounding half-even loses a cent. "
                    "I would switch to Decimal quantize with ROUND_HALF_UP and add a test.")


def canonical(body: dict[str, Any]) -> list[str]:
    """The request's input in the order a provider reads it, as JSON pieces, without the
    cache_control markers (they say where to cache, they are not cached content)."""
    def strip(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k != "cache_control"}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    pieces = [json.dumps(strip(body.get("tools") or []), sort_keys=True),
              json.dumps(strip(body.get("system") or ""), sort_keys=True)]
    pieces += [json.dumps(strip(m), sort_keys=True) for m in body.get("messages") or []]
    return pieces


def shared(previous: dict[str, Any], current: dict[str, Any]) -> tuple[float, float]:
    """The share of ``current``'s serialized input that starts exactly as ``previous``, and
    the share of ``previous`` that ``current`` starts with (100%: nothing sent before was
    changed, only new messages added: the most a prompt cache can give)."""
    a, b = "".join(canonical(previous)), "".join(canonical(current))
    common = len(os.path.commonprefix([a, b]))  # noqa: RUF071 (strings, by character)
    return common / len(b), common / len(a)


def run(dialect_name: str, turns: int, window: int, memory: bool = False,
        chat: bool = False, compact_every: int = 0) -> dict[str, Any]:
    dialect = OpenAIDialect() if dialect_name == "openai" else AnthropicDialect()
    with tempfile.TemporaryDirectory() as tmp, WireServer(
            dialect, window=window, responder=Model(calls_tools=not chat),
            strict_tools=True) as server:
        session = start(Path(tmp), server, window=window, max_output=2000)
        core = session.app.session
        engine = core.engine
        if memory:
            core.layers = MemoryLayers(Facts(facts()), clock=Clock())
            core.continue_in(core.state, None)  # the profile frozen with the layers
        for name, (fn, description) in TOOLS.items():
            engine.tools[name] = Tool(ToolSpec(name, description, {"type": "object"}), fn)
        for i in range(turns):
            reply = session.built.send(f"[{i}] next step on the refund rounding bug")
            assert reply.status == "ok", (i, reply.error)
            if compact_every and (i + 1) % compact_every == 0:
                session.built.app.compact()
        refused = [("orphan tool message" if tool_pairing_error(dialect, r.body) else
                    f"too long ({r.prompt_tokens:,} tokens)") for r in server.rejected]
        shares: list[float] = []
        kept: list[float] = []
        sizes: list[int] = []
        previous: dict[str, Any] | None = None
        restorations = 0
        summaries: list[float] = []  # each summary request against the chat request before it
        restored: list[float] = []  # the first chat request after a restoration against it
        for body in server.bodies:
            if is_summary(body):
                if previous is not None:
                    summaries.append(shared(previous, body)[0])
                continue
            if last_user_text(body).startswith("CONTEXT RESTORATION"):
                restorations += 1
                previous = body  # a compaction: the prefix starts again, from here
                continue
            if previous is not None and last_user_text(previous).startswith(
                    "CONTEXT RESTORATION"):
                restored.append(shared(previous, body)[0])
                previous = body
                continue
            if previous is not None:
                share, whole = shared(previous, body)
                shares.append(share)
                kept.append(whole)
                sizes.append(len("".join(canonical(body))))
            previous = body
        weighted = sum(s * n for s, n in zip(shares, sizes, strict=True)) / sum(sizes)
        label = dialect_name + (" chat" if chat else "") + (" +memory" if memory else "")
        return {"dialect": label,
                "requests": len(server.bodies),
                "compactions": restorations, "pairs": len(shares),
                "mean": statistics.fmean(shares), "median": statistics.median(shares),
                "min": min(shares), "at_least_90": sum(s >= 0.9 for s in shares) / len(shares),
                "weighted": weighted, "kept": statistics.fmean(kept),
                "kept_whole": sum(k == 1.0 for k in kept) / len(kept), "refused": refused,
                "summaries": summaries, "restored": restored}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=60)
    parser.add_argument("--window", type=int, default=32_000)
    parser.add_argument("--dialect", choices=("openai", "anthropic"), action="append",
                        help="only this dialect (repeatable; default both)")
    parser.add_argument("--memory", action="store_true",
                        help="also run with the memory layers, side by side")
    parser.add_argument("--chat", action="store_true",
                        help="a plain chat: the model calls no tools")
    parser.add_argument("--compact-every", type=int, default=0,
                        help="also a manual compact after every N turns")
    args = parser.parse_args()
    runs = [(name, memory) for name in (args.dialect or ("openai", "anthropic"))
            for memory in ((False, True) if args.memory else (False,))]
    for name, memory in runs:
        r = run(name, args.turns, args.window, memory, args.chat, args.compact_every)
        print(f"{r['dialect']:22} {args.turns} turns, window {args.window:,}: "
              f"{r['requests']} requests, {r['compactions']} compactions, {r['pairs']} pairs "
              f"between compactions; prefix share mean {r['mean']:.1%}, median "
              f"{r['median']:.1%}, min {r['min']:.1%}, by size {r['weighted']:.1%}; "
              f"pairs >= 90%: {r['at_least_90']:.0%}; previous request repeated whole: "
              f"{r['kept_whole']:.0%} of pairs (on average {r['kept']:.1%} of it); refused by "
              f"the server: {', '.join(r['refused']) or 'none'}")
        for what, shares in (("summary requests", r["summaries"]),
                             ("first requests after a restoration", r["restored"])):
            if shares:
                print(f"{'':22} {what}: {len(shares)}, prefix share of the chat request "
                      f"before: mean {statistics.fmean(shares):.1%}, min {min(shares):.1%}")


if __name__ == "__main__":
    main()
