"""What one compaction costs on each summary engine, for tool-heavy sessions of 40k, 150k and
500k tokens: input billed uncached, read from the cache and written to it, output, the price at
list prices (models/prices.py), and the summary's words.

The engines: (a) the separate call (its own system prompt, the conversation as JSON in one
message, in chunks when it does not fit: the path before compaction/prefixed.py, still the
fallback), (b) ``compaction.engine: rollchat`` (the chat's request, its cached prefix, plus the
instruction), (c) ``compaction.engine: provider`` on Anthropic (on-demand compaction with
rollchat's instructions). Each runs rollchat's own Summarizer through the real anthropic SDK
against tests/wire_anthropic_compaction.py, which bills as prompt caching is documented
(breakpoints, a 20-block lookback, 1,024 tokens at least) and reports a compaction's usage as a
compaction iteration; before each, the chat's last request is sent once, so the cache holds
what the chat wrote (not counted: the chat paid for it). The summaries are scripted (the same
text for every engine), so their words show what reaches the transcript, not a model's quality.

Run: .venv/bin/python bench/bench_compaction_cost.py [--sizes 40000,150000,500000]
     [--kind tools|talk]
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.wire_anthropic_compaction import CompactionServer, Running, echo
from tests.wire_servers import _tokens

from rollchat.compaction.policy import compute_budget
from rollchat.compaction.prefixed import OPENING, conversation_turns
from rollchat.compaction.request import SUMMARY_SYSTEM_PROMPT
from rollchat.compaction.summarizer import Summarizer
from rollchat.config.settings import SummaryConfig
from rollchat.domain import Message, ToolCall, Usage
from rollchat.models.prices import cost, money, price_for
from rollchat.models.tokens import TokenCounter
from rollchat.providers.anthropic import AnthropicProvider
from rollchat.providers.base import ChatRequest, ToolSpec
from rollchat.storage.transcript import SUMMARY_END, SUMMARY_START

MODEL = "claude-sonnet-4-6"  # on-demand compaction's documented models include it
PRICE = price_for("claude-sonnet-4-5")  # the list price: $3 in, $15 out, $0.30 read, $3.75 write
SYSTEM = "You are a coding agent. Read files, run tests, fix what fails. Be brief."
TOOLS = (ToolSpec("read_file", "Read a file of the repository.",
                  {"type": "object", "properties": {"path": {"type": "string"}}}),
         ToolSpec("run_tests", "Run the test suite and return its log.",
                  {"type": "object", "properties": {"target": {"type": "string"}}}))
SUMMARY = (f"{SUMMARY_START}\n**Background Context:** Initial session.\n\n"
           "**Current Session Summary:**\n**Topics Discussed:**\n"
           "- fixing the refund retries in billing/retry.py\n"
           "- the ledger migration 0042 and its failing test\n\n"
           "**Decisions Made:**\n- retry refunds 5 times with exponential backoff\n"
           "- keep the ledger table append-only\n\n"
           "**Pending:**\n- rerun tests/test_refunds.py after the migration\n"
           f"{SUMMARY_END}")


def session(tokens: int, kind: str = "tools") -> list[Message]:
    """A tool-heavy conversation of about ``tokens``: each turn reads a file and runs the tests
    (results of about 1,500 and 2,500 tokens) before it answers. ``kind`` "talk": the same
    size in long answers and no tools (nothing a separate call shortens)."""
    messages: list[Message] = []
    n = 0
    while sum(_tokens(m.content) for m in messages) < tokens:
        n += 1
        if kind == "talk":
            prose = " ".join(f"Option {n}.{i}: retry the refund with backoff, log the ledger "
                             f"entry, and alert when attempt {i} fails." for i in range(150))
            messages += [Message("user", f"Step {n}: what are our options for module {n}?"),
                         Message("assistant", prose)]
            continue
        code = "".join(f"def handler_{n}_{i}(request):\n    return retry(request, {i})\n"
                       for i in range(110))
        log = "".join(f"tests/test_refunds.py::test_case_{n}_{i} PASSED\n" for i in range(160))
        messages += [
            Message("user", f"Step {n}: check billing/module_{n}.py and run its tests."),
            Message("assistant", "", tool_calls=(
                ToolCall(f"r{n}", "read_file", {"path": f"billing/module_{n}.py"}),)),
            Message("tool", code, tool_call_id=f"r{n}", name="read_file"),
            Message("assistant", "", tool_calls=(
                ToolCall(f"t{n}", "run_tests", {"target": f"module_{n}"}),)),
            Message("tool", log + "1 failed: test_retry_limit", tool_call_id=f"t{n}",
                    name="run_tests"),
            Message("assistant", f"Module {n}: the retry limit was off by one; fixed.")]
    return messages


def answer(body: dict[str, Any]) -> dict[str, Any]:
    """The model: a summary to a summary request (either kind), else an echo."""
    system = body.get("system") or [{}]
    last = body["messages"][-1]["content"]
    text = last if isinstance(last, str) else "".join(b.get("text", "") for b in last
                                                       if isinstance(b, dict))
    if system[0].get("text") == SUMMARY_SYSTEM_PROMPT or text.startswith(OPENING):
        return {"text": SUMMARY}
    return echo(body)


@dataclass
class Row:
    engine: str
    requests: int
    uncached: int
    read: int
    written: int
    output: int
    words: int

    @property
    def usage(self) -> Usage:
        return Usage(self.uncached + self.read + self.written, self.output, self.read,
                     self.written)


def measure(engine: str, messages: list[Message], window: int) -> Row:
    server = CompactionServer(chat=answer, summary=lambda body: SUMMARY)
    running = Running(server)
    try:
        provider = AnthropicProvider(MODEL, api_key="bench", base_url=running.url, timeout=600)
        chat = ChatRequest(MODEL, SYSTEM, tuple(messages), 4096, tools=TOOLS)
        list(provider.stream(ChatRequest(MODEL, SYSTEM, tuple(messages[:-1]), 4096,
                                         tools=TOOLS)))  # the chat's last request: cached
        server.requests.clear()
        budget = compute_budget(window, 4096, 0.8, 1000)
        summarizer = Summarizer(provider, model=MODEL, config=SummaryConfig(), budget=budget,
                                counter=TokenCounter(MODEL),
                                engine="provider" if engine == "provider" else "rollchat")
        outcome = summarizer.summarize(conversation_turns(messages), None, None,
                                       prefix=None if engine == "separate" else chat)
        assert not outcome.fallback_used, outcome.reason
        billed = [s.billed for s in server.requests if s.billed is not None]
        summary = outcome.summary
        words = len(" ".join([summary.background, *summary.topics, *summary.decisions,
                              *summary.pending]).split())
        return Row(engine, len(billed), sum(b.uncached for b in billed),
                   sum(b.read for b in billed), sum(b.written for b in billed),
                   outcome.usage.output_tokens, words)
    finally:
        running.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="40000,150000,500000")
    parser.add_argument("--kind", choices=("tools", "talk"), default="tools")
    args = parser.parse_args()
    assert PRICE is not None
    print("| session | window | engine | requests | uncached | cache reads | cache writes | "
          "output | price | vs separate | summary words |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for size in (int(s) for s in args.sizes.split(",")):
        messages = session(size, args.kind)
        window = 200_000 if size < 180_000 else 1_000_000  # 500k: Sonnet's 1M window
        base = None
        for engine in ("separate", "rollchat", "provider"):
            row = measure(engine, messages, window)
            price = cost(row.usage, PRICE)
            base = price if base is None else base
            print(f"| {size // 1000}k | {window // 1000}k | {engine} | {row.requests} | "
                  f"{row.uncached:,} | {row.read:,} | {row.written:,} | {row.output:,} | "
                  f"{money(price)} | {price / base:.1%} | {row.words} |", flush=True)


if __name__ == "__main__":
    main()
