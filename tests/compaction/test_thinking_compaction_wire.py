"""A demanding user's day on the default model, claude-sonnet-5-5 (adaptive thinking on by
default, its thinking bound to everything before it), with ``compaction.engine: provider``:
rollchat run as a subprocess through the real anthropic SDK against the local server of
tests/wire_anthropic_compaction.py with ``thinks`` (the thinking rules, the compaction rules,
the model's parameter refusals and tool pairing enforced at once). A tool loop with thinking,
``compact`` by the server, a tool turn in the child, an automatic compaction keeping a turn,
a tool turn after it, then ``-c`` in a new process and a tool turn there."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from rollchat.domain import Thinking
from rollchat.providers.anthropic_compaction import COMPACT_BETA
from rollchat.providers.names import ANTHROPIC, DEFAULT_MODELS
from rollchat.storage.transcript import SUMMARY_END, SUMMARY_START, parse
from tests.compaction.test_provider_engine_wire import S1, block
from tests.e2e import agent_file, clean_env, run_piped, write_config
from tests.wire_anthropic_compaction import CompactionServer, Seen, compaction_server
from tests.wire_servers import last_user_text
from tests.wire_thinking import unmarked

__all__ = ["compaction_server"]
Server = tuple[CompactionServer, str]
MODEL = DEFAULT_MODELS[ANTHROPIC]

TOOLS = agent_file('"""An ops agent."""\nname = "Ops"\napproval = "ask"\n'
                   'allow = ["read_log", "count_words"]', '''
def read_log(name: str) -> str:
    """Read a build log.

    Args:
        name: The log's name.
    """
    return f"{name}: " + "step ok; " * int(name.split("-")[-1])
''', '''
def count_words(text: str) -> str:
    """Count the words of a text.

    Args:
        text: The text.
    """
    return str(len(text.split()))
''', "tools = [read_log, count_words]")


def config(tmp_path: Path) -> Path:
    (tmp_path / "ops.py").write_text(TOOLS, encoding="utf-8")
    return write_config(tmp_path / "rollchat.yml", f"""\
agents:
  assistant:
    file: {tmp_path / "ops.py"}
    system_prompt: You are the wire test agent.
    max_output_tokens: 1024
    compaction:
      engine: provider
models:
  {MODEL}:
    context_window: 8192
session:
  keep_recent_turns: 1
  compact_threshold: 0.6
tools:
  max_result_tokens: 3000
retry:
  max_retries: 1
  base_delay: 0
summary:
  timeout_seconds: 20
""")


def thought(typed: str, step: str) -> str:
    return f"THOUGHT[{step}] about {typed[:30]!r}: the user wants this; plan it."


def answer(body: dict[str, Any]) -> dict[str, Any]:
    """The model: reads logs when asked (one or two at a time), counts words, answers the
    results; every answer thinks first (the server adds the signed block)."""
    typed = last_user_text(body)
    last = body["messages"][-1]
    content = last["content"] if isinstance(last["content"], list) else []
    results = [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]
    if typed.startswith("CONTEXT RESTORATION") or "CONTEXT RESTORATION" in typed[:200]:
        return {"text": "Ready to continue.", "thought": thought(typed, "restore")}
    if results:
        return {"text": f"Done: {str(results[-1]['content'])[:40]}",
                "thought": thought(typed, "answer")}
    if "logs" in typed:
        return {"tools": [{"id": "r1", "name": "read_log", "input": {"name": "big-600"}},
                          {"id": "r2", "name": "read_log", "input": {"name": "huge-600"}}],
                "thought": thought(typed, "read")}
    if "medium" in typed:
        return {"tools": [{"id": "m1", "name": "read_log", "input": {"name": "medium-500"}}],
                "thought": thought(typed, "read")}
    if "log" in typed:
        return {"tools": [{"id": "r0", "name": "read_log", "input": {"name": "build-40"}}],
                "thought": thought(typed, "read")}
    if "count" in typed:
        return {"tools": [{"id": "w1", "name": "count_words", "input": {"text": typed}}],
                "thought": thought(typed, "count")}
    return {"text": f"echo: {typed[:40]}", "thought": thought(typed, "plain")}


def rollchat(url: str, tmp_path: Path, lines: str, *args: str) -> str:
    done = run_piped(tmp_path, lines, "--config", str(config(tmp_path)), "--provider",
                     "anthropic", "--model", MODEL, "--base-url", url, *args,
                     env=clean_env(tmp_path / "home", ANTHROPIC_API_KEY="test"), timeout=100)
    assert done.returncode == 0, done.stderr + done.stdout
    assert "Traceback" not in done.stderr, done.stderr
    return " ".join(done.stdout.split())


DAY = ("read the build log\nwhat next?\ncompact\nread both logs\ncheck the medium log\n"
       "count these words\nexit\n")
PLAIN = ("The user read the build logs with read_log: every step passed. The medium log is "
         "clean too.")  # no markers: rollchat fills its structure in locally
S3 = block("Logs were read.", "counting words", "keep the logs", "read the zulu log")
S4 = block("Words were counted.", "the build log again", "nothing new", "ship it")


def thinking_blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message["content"] if isinstance(message["content"], list) else []
    return [b for b in content if b.get("type") in ("thinking", "redacted_thinking")]


def without_thinking(message: dict[str, Any]) -> dict[str, Any]:
    content = message["content"]
    if isinstance(content, list):
        content = [b for b in content if b.get("type") not in ("thinking", "redacted_thinking")]
    return unmarked({**message, "content": content})


def shape(body: dict[str, Any]) -> list[tuple[str, list[str]]]:
    """A request's messages as roles and block types (what a failure says)."""
    return [(m["role"], [b["type"] for b in m["content"]] if isinstance(m["content"], list)
             else ["str"]) for m in body["messages"]]


def segments(requests: list[Seen]) -> list[list[Seen]]:
    """The requests between compactions, each segment ending with its compaction request."""
    out: list[list[Seen]] = [[]]
    for seen in requests:
        out[-1].append(seen)
        if "compaction" in seen.body:
            out.append([])
    return [s for s in out if s]


@pytest.mark.timeout(300)  # two chats, each bounded at 100 s
def test_a_day_on_the_default_model_with_server_compaction(
        compaction_server: Server, tmp_path: Path) -> None:
    server, url = compaction_server
    server.thinks = True
    server.chat = answer
    summaries = iter([S1, PLAIN, S3, S4])
    server.summary = lambda body: next(summaries)
    out = rollchat(url, tmp_path, DAY)
    assert "the last 1 turn kept verbatim" in out  # the automatic compaction kept one turn
    day = len(server.requests)
    out = rollchat(url, tmp_path, "and the build log again\nexit\n", "-c")
    assert "Done: build-40" in out
    requests = server.requests
    assert server.rejected == [], shape(server.rejected[0].body)

    # every summary was the server's compaction, asked on the chat's own request: compact,
    # the automatic one, each exit's; none written apart (no background summary either)
    compactions = [i for i, seen in enumerate(requests) if "compaction" in seen.body]
    assert len(compactions) == 4 and compactions[2] == day - 1
    asked = {last_user_text(seen.body) for seen in requests if "compaction" not in seen.body}
    restorations = {a for a in asked if a.startswith("CONTEXT RESTORATION")}
    assert asked - restorations == {*DAY.splitlines(), "and the build log again"} - {
        "compact", "exit"}

    # the request prefix: between compactions each request starts with the one before it,
    # with the same system prompt and tools; a compaction request is the chat's next one
    for segment in segments(requests):
        for before, after in itertools.pairwise(segment):
            sent = unmarked(before.body["messages"])
            assert unmarked(after.body["messages"][:len(sent)]) == sent
            assert after.body["system"] == before.body["system"]
            assert after.body.get("tools") == before.body.get("tools")

    # thinking travels only as thinking blocks: never in a text, a tool result, a restoration
    # prompt or a compaction's instructions
    for seen in requests:
        for message in seen.body["messages"]:
            assert "THOUGHT[" not in json.dumps(without_thinking(message))
        assert "THOUGHT[" not in json.dumps(seen.body.get("compaction"))

    # the turn kept by the automatic compaction goes after the restoration without its
    # thinking (dropped whole, as the rules require there: see the test below); the rest
    # byte for byte as the parent sent it
    auto = compactions[1]
    summarized = requests[auto].body["messages"]
    first = requests[auto + 2].body["messages"]
    assert "CONTEXT RESTORATION" in json.dumps(first[1]) and len(first) == 8
    kept, original = first[3:7], summarized[-4:]
    assert last_user_text({"messages": original[:1]}) == "check the medium log"
    assert [thinking_blocks(m) for m in kept] == [[], [], [], []]
    assert [len(thinking_blocks(m)) for m in original] == [0, 1, 0, 1]
    assert [unmarked(m) for m in kept] == [without_thinking(m) for m in original]

    # the transcripts: thinking in blocks of its own, never the assistant's words, the kept
    # turn's too; no summary holds any
    files = sorted((tmp_path / "sessions").glob("*.md"), key=lambda p: p.stat().st_mtime)
    assert len(files) == 4
    thoughts = []
    for path in files:
        text = path.read_text(encoding="utf-8")
        summary = text[text.index(SUMMARY_START):text.index(SUMMARY_END)]
        assert "THOUGHT[" not in summary
        for turn in parse(text).turns:
            assert "THOUGHT[" not in turn.assistant
            said = [b.text for b in turn.blocks if isinstance(b, Thinking)]
            assert said and all(t.startswith("THOUGHT[") for t in said), (path, turn.title)
            thoughts += said
    assert sum("THOUGHT[read] about 'check the medium log'" in t for t in thoughts) == 2

    # the resumed chat started with the last session's block, sent first as issued
    resumed = requests[day].body["messages"]
    assert resumed[0]["content"][0]["content"] == S3 and len(resumed) == 2


def test_the_kept_turns_thinking_after_rollchats_restoration_is_refused(
        compaction_server: Server) -> None:
    """Why rollchat drops a kept turn's thinking: its compaction summarizes the whole
    request (the kept turn inside it) and the restoration comes between the block and the kept
    turn, so the server refuses that thinking ("bound to a different conversation"); the same
    turn kept as the docs' keep-tail compaction does (left out of the compaction, right after
    the block) is taken."""
    import anthropic

    server, url = compaction_server
    server.thinks = True
    server.chat = answer
    server.summary = lambda body: f"The first {len(body['messages'])} messages, summarized."
    client = anthropic.Anthropic(api_key="k", base_url=url, max_retries=0)
    ask: dict[str, Any] = {"model": MODEL, "max_tokens": 200, "system": "sys",
                           "betas": [COMPACT_BETA]}

    def reply(messages: list[dict[str, Any]], **kw: Any) -> dict[str, Any]:
        with client.beta.messages.stream(**{**ask, **kw}, messages=messages) as stream:
            content = stream.get_final_message().content
        return {"role": "assistant", "content": [b.model_dump(exclude_none=True)
                                                 for b in content]}

    def result(call: dict[str, Any], said: str) -> dict[str, Any]:
        return {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call["id"],
                                             "content": said}]}

    def turn(history: list[dict[str, Any]], typed: str) -> list[dict[str, Any]]:
        """A tool turn: the question, the call (thinking first), its result, the answer."""
        user = {"role": "user", "content": typed}
        call = reply([*history, user])
        done = [user, call, result(call["content"][-1], "3")]
        return [*done, reply([*history, *done])]

    older = turn([], "count these words")
    kept = turn(older, "check the medium log")
    assert [len(thinking_blocks(m)) for m in kept] == [0, 1, 0, 1]
    ask_next = {"role": "user", "content": "and now?"}

    def block_of(messages: list[dict[str, Any]]) -> dict[str, Any]:
        compacted = reply(messages, extra_body={"compaction": {"type": "summarize"}})
        return {"role": "assistant", "content": compacted["content"][:1]}

    # rollchat's layout: the whole request summarized, the restoration between
    restoration = [{"role": "user", "content": "CONTEXT RESTORATION: go on."},
                   {"role": "assistant", "content": "Ready."}]
    whole = block_of([*older, *kept])
    with pytest.raises(anthropic.BadRequestError, match="bound to a different conversation"):
        reply([whole, *restoration, *kept, ask_next])
    reply([whole, *restoration, *[without_thinking(m) for m in kept], ask_next])  # taken
    # the docs' keep-tail layout: only the older turn summarized, the kept turn right after
    tail = block_of(older)
    reply([tail, *kept, ask_next])
    with pytest.raises(anthropic.BadRequestError, match="bound to a different conversation"):
        reply([tail, *kept, ask_next], system="another system prompt")
    with pytest.raises(anthropic.BadRequestError, match="bound to a different conversation"):
        reply([tail, *restoration, *kept, ask_next])  # a message added before the kept turn
    assert len(server.rejected) == 3
    # a compaction of messages ending with a tool call still waiting for its result
    with pytest.raises(anthropic.BadRequestError, match="compaction incomplete turn"):
        block_of([*older, *kept[:2]])
