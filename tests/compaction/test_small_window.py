"""A small window goes to the conversation (issue 40.3): what rollchat itself asks of a 2K
local server, read through the real openai SDK from tests/wire_local.py's servers."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from rollchat.compaction.prefixed import OPENING
from rollchat.compaction.request import SUMMARY_SYSTEM_PROMPT
from rollchat.domain import Summary
from rollchat.providers.openai import OpenAIProvider
from rollchat.storage.transcript import SUMMARY_END, SUMMARY_START
from tests.compaction.test_autocompact import build_app
from tests.wire_local import Reply, local_server, sse_answer

SUMMARY = (f"{SUMMARY_START}\n**Background Context:** A queue was chosen.\n\n"
           "**Current Session Summary:**\n**Topics Discussed:**\n- the job queue\n\n"
           f"**Decisions Made:**\n- use rabbitmq\n\n**Pending:**\n- none\n{SUMMARY_END}")


def kind(body: dict[str, Any]) -> str:
    messages = body["messages"]
    text = [m.get("content") or "" for m in messages]
    flat = ["".join(b.get("text", "") for b in t) if isinstance(t, list) else t for t in text]
    if (messages[0]["role"] == "system" and flat[0] == SUMMARY_SYSTEM_PROMPT) \
            or flat[-1].startswith(OPENING):
        return "summary"
    if any(t.startswith("CONTEXT RESTORATION") for t in flat) and flat[-1].startswith(
            "CONTEXT RESTORATION"):
        return "restore"
    return "chat"


def provider(url: str) -> OpenAIProvider:
    return OpenAIProvider("smollm2", api_key=None, base_url=url, timeout=30)


def test_a_2k_window_gets_a_one_line_acknowledgment_and_a_true_cut_off_warning(
        tmp_path: Path) -> None:
    def chat(body: dict[str, Any]) -> Reply:
        what = kind(body)
        if what == "summary":
            return sse_answer(SUMMARY)
        if what == "restore":  # a small model rambles until it is stopped
            return sse_answer("Understood, " * 20, finish="length", written=64)
        return sse_answer("Rabbitmq it is.")

    with local_server(chat=chat) as server:
        built = build_app(tmp_path, provider(server.url), window=2048, max_output=512)
        assert built.send("which queue for jobs?").status == "ok"
        built.app.run(built.session.compact())
        [restore] = [b for _, b in server.bodies if kind(b) == "restore"]
    assert restore["max_tokens"] == 2048 // 32  # not 400: 1/32 of the window
    out = " ".join(built.output.split())
    assert "The acknowledgment was cut off at its limit (64 tokens" in out
    # (a number of its own: a session id or clock made at 12:51:2x holds "512" too)
    assert re.search(r"\b512\b", out) is None and "raise max_output_tokens" not in out
    assert "Error: acknowledgment limit" not in out  # said once, by the warning


def test_a_summary_reply_without_markers_is_taken_not_asked_again(tmp_path: Path) -> None:
    def chat(body: dict[str, Any]) -> Reply:
        what = kind(body)
        if what == "summary":  # a small model ignores the format
            return sse_answer("We picked rabbitmq as the job queue.")
        return sse_answer("Understood." if what == "restore" else "Rabbitmq it is.")

    with local_server(chat=chat) as server:
        built = build_app(tmp_path, provider(server.url), window=2048, max_output=512)
        assert built.send("which queue for jobs?").status == "ok"
        built.app.run(built.session.compact())
        asked = [kind(b) for _, b in server.bodies]
    assert asked == ["chat", "summary", "restore"]  # asked once
    summary = built.session.state.parent_summary
    assert summary is not None and not summary.fallback
    assert summary.background == "We picked rabbitmq as the job queue."


def test_each_summary_request_of_saved_turns_fits_a_2k_window_with_its_output() -> None:
    from rollchat.compaction import policy
    from rollchat.compaction.summarizer import Summarizer
    from rollchat.config.settings import SummaryConfig
    from rollchat.models.tokens import TokenCounter
    from tests.compaction.test_compaction import turn
    from tests.wire_local import _tokens, llama_server

    topics = ["queues", "retries", "alerts", "deploys", "caches", "limits", "logs", "tests"]
    turns = [turn(i, f"Tell me about {t} in our job system, in detail please. " * 20,
                  f"About {t}: we keep it simple and measured. " * 40)
             for i, t in enumerate(topics, 1)]
    with llama_server(lambda body: SUMMARY, slots=1) as server:
        budget = policy.compute_budget(2048, 512, 0.8, 1000)
        summarizer = Summarizer(provider(server.url), model="smollm2", config=SummaryConfig(),
                                budget=budget, counter=TokenCounter("smollm2"))
        parent = Summary("An earlier session about the job system. " * 20,
                         tuple(f"topic {t} " * 6 for t in topics),
                         tuple(f"decided {t} " * 6 for t in topics), ("None",))
        outcome = summarizer.summarize(turns, parent, None)
        sent = [b for _, b in server.bodies]
    assert len(sent) > 1 and not outcome.fallback_used  # chunked, each one answered
    for body in sent:  # never truncated by the server: the prompt and its output fit
        assert _tokens(body) + body["max_tokens"] <= 2048, (_tokens(body), body["max_tokens"])


def test_a_window_stated_after_the_context_began_refits_the_own_tools(tmp_path: Path) -> None:
    """The chat started on an assumed 128K window (the server was asked in the background):
    once the server states 2,048 tokens, the session's own tools shrink to their share."""
    from rollchat.models.windows import WindowBook
    from rollchat.session.build import OWN_TOOLS_SHARE
    from rollchat.session.windowing import ask_server
    from rollchat.tools import ARCHIVE_TOOL_NAME
    from rollchat.tools.archive import ARCHIVE_BRIEF
    from tests.wire_local import recorded

    def chat(body: dict[str, Any]) -> Reply:
        what = kind(body)
        return sse_answer(SUMMARY if what == "summary" else "Understood." if what == "restore"
                          else "Rabbitmq it is.")

    routes = {"GET /v1/models": recorded("models.http"), "GET /props": recorded("props.http")}
    with local_server(routes, chat=chat) as server:
        built = build_app(tmp_path, provider(server.url), window=128_000, max_output=512)
        assert built.send("which queue for jobs?").status == "ok"
        built.app.run(built.session.compact())  # a child: the archive reads its parent
        assert built.send("and retries?").status == "ok"
        session = built.session
        session.windows.book = WindowBook(tmp_path / "windows.json")
        session.windows.base_url = server.url
        ask_server(session.windows, session.current.provider)
        assert session.windows.asking is not None
        session.windows.asking.join(10)
        assert built.send("and alerts?").status == "ok"
        chats = [b for r, b in server.bodies if r.startswith("POST") and kind(b) == "chat"]
    whole, small = chats[-2]["tools"], chats[-1]["tools"]
    assert [t["function"]["name"] for t in whole] == [ARCHIVE_TOOL_NAME]
    assert [t["function"]["description"] for t in small] == [ARCHIVE_BRIEF.description]
    assert len(json.dumps(small)) // 4 <= 2048 * OWN_TOOLS_SHARE < len(json.dumps(whole)) // 4


def test_the_summary_reusing_the_chats_prefix_is_capped_to_what_the_window_leaves() -> None:
    """The summary request that reuses the chat's cached prefix (compaction/prefixed.py) carries
    the whole chat: its output limit is capped as it is sent to what the window leaves beside
    it, not only to what the config allowed (512 of a 2K window beside a 1.5K prompt: the
    server cut it, "Context size has been exceeded"). Less than a summary needs: see below."""
    from rollchat.compaction import policy
    from rollchat.compaction.summarizer import Summarizer
    from rollchat.config.settings import SummaryConfig
    from rollchat.domain import Message
    from rollchat.models.tokens import TokenCounter
    from rollchat.providers.base import ChatRequest
    from tests.compaction.test_compaction import turn
    from tests.wire_local import _tokens, llama_server

    topics = ["queues", "retries", "alerts"]  # 448 tokens left of the 512 asked for
    # prose and ids: the double counts about what tiktoken counts (a character in four)
    turns = [turn(i, f"Tell me about {t} in our job system, please. " * 6,
                  " ".join(f"{t}{n} ran in pool {n % 5}." for n in range(34)))
             for i, t in enumerate(topics, 1)]
    prefix = ChatRequest(model="smollm2", system="You help.", messages=tuple(
        m for t in turns for m in (Message("user", t.user), Message("assistant", t.assistant))))
    long_reply = "We went over queues, retries, alerts and deploys of the job system. " * 60
    with llama_server(lambda body: long_reply, slots=1) as server:
        budget = policy.compute_budget(2048, 512, 0.8, 1000)
        summarizer = Summarizer(provider(server.url), model="smollm2", config=SummaryConfig(),
                                budget=budget, counter=TokenCounter("smollm2"))
        outcome = summarizer.summarize(turns, None, None, prefix=prefix)
        [body] = [b for _, b in server.bodies]
    assert _tokens(body) > 1000  # the whole chat rides in it
    assert _tokens(body) + body["max_tokens"] <= 2048, (_tokens(body), body["max_tokens"])
    assert server.events == [("arrived", 1), ("answered", 1)]  # once, and answered
    assert outcome.usage.output_tokens == body["max_tokens"]


def test_a_summary_request_the_window_leaves_no_reply_room_is_cut_smaller_not_sent() -> None:
    """The chat's prefix held every turn when the compaction was decided, but counted as it
    is sent, the request leaves the reply less than the least summary needs (a CI run sent it
    with ``max_tokens: 1``, and the server refused it as too long): it is not sent; the turns
    go the separate way, in parts that each leave the reply its room, and the model answers."""
    from rollchat.compaction import policy
    from rollchat.compaction.call import LEAST_REPLY_TOKENS
    from rollchat.compaction.summarizer import Summarizer
    from rollchat.config.settings import SummaryConfig
    from rollchat.domain import Message
    from rollchat.models.tokens import TokenCounter
    from rollchat.providers.base import ChatRequest
    from tests.compaction.test_compaction import turn
    from tests.wire_local import _tokens, llama_server

    topics = ["queues", "retries", "alerts", "deploys"]  # 61 tokens left for the reply
    turns = [turn(i, f"Tell me about {t} in our job system, please. " * 6,
                  " ".join(f"{t}{n} ran in pool {n % 5}." for n in range(34)))
             for i, t in enumerate(topics, 1)]
    prefix = ChatRequest(model="smollm2", system="You help.", messages=tuple(
        m for t in turns for m in (Message("user", t.user), Message("assistant", t.assistant))))
    with llama_server(lambda body: SUMMARY, slots=1) as server:
        budget = policy.compute_budget(2048, 512, 0.8, 1000)
        summarizer = Summarizer(provider(server.url), model="smollm2", config=SummaryConfig(),
                                budget=budget, counter=TokenCounter("smollm2"))
        outcome = summarizer.summarize(turns, None, None, prefix=prefix)
        sent = [b for _, b in server.bodies]
    assert len(sent) > 1 and not outcome.fallback_used, outcome.reason
    for body in sent:  # each one a summary of some turns, with room for its reply
        assert kind(body) == "summary" and not body["messages"][-1]["content"].startswith(
            OPENING)
        assert body["max_tokens"] >= LEAST_REPLY_TOKENS
        assert _tokens(body) + body["max_tokens"] <= 2048, (_tokens(body), body["max_tokens"])
    assert "use rabbitmq" in outcome.summary.decisions
