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

``--api responses``: the same engines on OpenAI's Responses API (``provider:
openai-responses``; the provider engine as at api.openai.com: ``context_management`` in a
``responses.create`` on the chat's request, its compaction output taken as the summary's size
and its answer cut at 16 tokens; ``provider.compact``: ``responses.compact``, as elsewhere;
each plus the readable summary asked from the cached prefix), through the real openai SDK
against tests/wire_responses.py,
billed as OpenAI documents automatic prompt caching (the longest prefix shared with a request
sent before, in 128-token steps, from 1,024 tokens on; cached input at the model's cached
price); see ``OpenAICache``.

Run: .venv/bin/python bench/bench_compaction_cost.py [--sizes 40000,150000,500000]
     [--kind tools|talk] [--api anthropic|responses]
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.wire_anthropic_compaction import CompactionServer, Running, echo
from tests.wire_responses import Answer, Compaction, ResponsesServer, said
from tests.wire_responses import last_user_text as responses_text
from tests.wire_servers import _tokens

from rollchat.compaction.policy import compute_budget
from rollchat.compaction.prefixed import OPENING, conversation_turns
from rollchat.compaction.request import SUMMARY_SYSTEM_PROMPT
from rollchat.compaction.summarizer import Summarizer
from rollchat.config.settings import SummaryConfig
from rollchat.domain import Message, Summary, ToolCall, Usage
from rollchat.models.prices import cost, money, price_for
from rollchat.models.tokens import TokenCounter
from rollchat.providers.anthropic import AnthropicProvider
from rollchat.providers.base import ChatRequest, ToolSpec
from rollchat.providers.openai_responses import ResponsesProvider, request_params
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
        return Row(engine, len(billed), sum(b.uncached for b in billed),
                   sum(b.read for b in billed), sum(b.written for b in billed),
                   outcome.usage.output_tokens, words(outcome.summary))
    finally:
        running.stop()


# OpenAI: a reasoning model (the Responses API is the one OpenAI recommends for them) where the
# session fits its window; gpt-4.1 for 500k (gpt-5 takes at most 272k input tokens)
OPENAI_MODELS = (("gpt-5", 272_000), ("gpt-4.1", 1_047_576))


class OpenAICache:
    """OpenAI's automatic prompt caching as its guide describes it: a request reads from the
    cache the longest prefix it shares with a request sent before, counted in 128-token
    steps, once that prefix is 1,024 tokens or more; nothing is billed for writing. The
    prompt is read in the order the model sees it: instructions, tools, input items (a
    request without tools, like ``responses.compact``, shares only the instructions with
    the chat's)."""

    def __init__(self) -> None:
        self.seen: list[str] = []
        self.billed: list[tuple[int, int, int]] = []  # (input, cached, output) per request

    def bill(self, body: dict[str, Any], output: int) -> tuple[int, int]:
        text = "\n".join([body.get("instructions") or "",
                          *(json.dumps(t, sort_keys=True) for t in body.get("tools") or []),
                          *(json.dumps(i, sort_keys=True) for i in body.get("input") or [])])
        shared = max((common_length(text, s) for s in self.seen), default=0)
        self.seen.append(text)
        total, prefix = _tokens(text), _tokens(text[:shared])
        cached = min(prefix // 128 * 128 if prefix >= 1024 else 0, total)
        self.billed.append((total, cached, output))
        return total, cached


def common_length(a: str, b: str) -> int:
    """How many leading characters ``a`` and ``b`` share (halving: the comparisons in C)."""
    low, high = 0, min(len(a), len(b))
    while low < high:
        middle = (low + high + 1) // 2
        if a[:middle] == b[:middle]:
            low = middle
        else:
            high = middle - 1
    return low


def responses_answer(cache: OpenAICache, body: dict[str, Any]) -> Answer:
    """The model on the Responses API: a summary to a summary request, else a short answer;
    its usage as ``cache`` bills it."""
    summary = body.get("instructions") == SUMMARY_SYSTEM_PROMPT or \
        responses_text(body).startswith(OPENING)
    reply = SUMMARY if summary else "Noted."
    output = _tokens(reply)
    if body.get("context_management"):  # the compaction pass's output taken as the summary's
        output = _tokens(SUMMARY) + body["max_output_tokens"]  # size, the answer cut short
    total, cached = cache.bill(body, output)
    return said(reply, input_tokens=total, cached=cached, output_tokens=output)


def measure_responses(engine: str, messages: list[Message], model: str, window: int) -> Row:
    """One compaction on the Responses API (see ``OpenAICache``)."""
    server, cache = ResponsesServer().start(), OpenAICache()
    server.responder = lambda body: responses_answer(cache, body)
    try:
        provider = ResponsesProvider(model, api_key="bench", base_url=server.url, timeout=600,
                                     in_response=engine == "provider")
        chat = ChatRequest(model, SYSTEM, tuple(messages), 4096, tools=TOOLS)
        list(provider.stream(replace(chat, messages=chat.messages[:-1])))  # cached
        cache.billed.clear()
        if engine == "provider.compact":  # the compaction's input: the chat's, without tools
            params = request_params(chat, images=False)
            total, cached = cache.bill({"instructions": params["instructions"],
                                        "input": params["input"]}, _tokens(SUMMARY))
            server.compactions.append(Compaction(input_tokens=total, cached=cached,
                                                 output_tokens=_tokens(SUMMARY)))
        budget = compute_budget(window, 4096, 0.8, 1000)
        summarizer = Summarizer(provider, model=model, config=SummaryConfig(), budget=budget,
                                counter=TokenCounter(model),
                                engine="provider" if engine.startswith("provider")
                                else "rollchat")
        outcome = summarizer.summarize(conversation_turns(messages), None, None,
                                       prefix=None if engine == "separate" else chat)
        assert not outcome.fallback_used, outcome.reason
        compacts = server.bodies("/v1/responses/compact")
        assert bool(compacts) == (engine == "provider.compact")
        return Row(engine, len(cache.billed), sum(t - c for t, c, _ in cache.billed),
                   sum(c for _, c, _ in cache.billed), 0,
                   sum(o for _, _, o in cache.billed), words(outcome.summary))
    finally:
        server.stop()


def words(summary: Summary) -> int:
    return len(" ".join([summary.background, *summary.topics, *summary.decisions,
                         *summary.pending]).split())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="40000,150000,500000")
    parser.add_argument("--kind", choices=("tools", "talk"), default="tools")
    parser.add_argument("--api", choices=("anthropic", "responses"), default="anthropic")
    args = parser.parse_args()
    print("| session | model | window | engine | requests | uncached | cache reads | "
          "cache writes | output | price | vs separate | summary words |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for size in (int(s) for s in args.sizes.split(",")):
        messages = session(size, args.kind)
        model, window = MODEL, 200_000 if size < 180_000 else 1_000_000  # Sonnet's 1M window
        if args.api == "responses":
            model, window = next((m, w) for m, w in OPENAI_MODELS if size < w * 0.9)
        price_of = PRICE if args.api == "anthropic" else price_for(model)
        assert price_of is not None
        base = None
        engines = ["separate", "rollchat", "provider"]
        engines += ["provider.compact"] if args.api == "responses" else []
        for engine in engines:
            row = (measure(engine, messages, window) if args.api == "anthropic"
                   else measure_responses(engine, messages, model, window))
            price = cost(row.usage, price_of)
            base = price if base is None else base
            print(f"| {size // 1000}k | {model} | {window // 1000}k | {engine} | "
                  f"{row.requests} | {row.uncached:,} | {row.read:,} | {row.written:,} | "
                  f"{row.output:,} | {money(price)} | {price / base:.1%} | {row.words} |",
                  flush=True)


if __name__ == "__main__":
    main()
