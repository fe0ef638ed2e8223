"""compaction.engine: provider in a whole chat (rollchat run as a subprocess, the real anthropic
SDK, the local server of tests/wire_anthropic_compaction.py): turns, compact through the
server's compaction, the signed block first on the next requests, an edited summary sent
instead of it, and rollchat's own summary when the server's compaction fails."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rollchat.compaction.prefixed import OPENING
from rollchat.storage.transcript import SUMMARY_END, SUMMARY_START, parse
from tests.e2e import clean_env, run_piped, write_config
from tests.wire_anthropic_compaction import CompactionServer, compaction_server, sign
from tests.wire_servers import last_user_text

__all__ = ["compaction_server"]
Server = tuple[CompactionServer, str]


def block(background: str, topic: str, decision: str, pending: str) -> str:
    return (f"{SUMMARY_START}\n**Background Context:** {background}\n\n"
            f"**Current Session Summary:**\n**Topics Discussed:**\n- {topic}\n\n"
            f"**Decisions Made:**\n- {decision}\n\n**Pending:**\n- {pending}\n{SUMMARY_END}")


S1 = block("Initial session.", "picking a queue for jobs", "use rabbitmq 3.13",
           "benchmark the zulu consumer")
S2 = block("The first session chose rabbitmq.", "retry policy", "retry 5 times",
           "wire the yankee alert")
LOG = "consumer log: " + "ack ok; " * 600  # a tool-sized text: the prefix is worth caching


def config(engine: str) -> str:
    return f"""\
agents:
  assistant:
    name: Assistant
    system_prompt: You are the wire test agent.
    compaction:
      engine: {engine}
retry:
  max_retries: 1
  base_delay: 0
summary:
  timeout_seconds: 20
"""


def rollchat(url: str, tmp_path: Path, lines: str, engine: str = "provider",
             **env: str) -> tuple[str, int, str]:
    cfg = write_config(tmp_path / "rollchat.yml", config(engine))
    done = run_piped(tmp_path, lines, "--config", str(cfg), "--provider", "anthropic",
                     "--model", "test-model", "--base-url", url,
                     env=clean_env(tmp_path / "home", ANTHROPIC_API_KEY="test", **env))
    return " ".join(done.stdout.split()), done.returncode, done.stderr


def answer(body: dict[str, Any]) -> dict[str, Any]:
    """The chat's answers: a long one (so the prefix is cached), a summary in rollchat's
    format when asked for one (the rollchat engine, the fallback), else an echo."""
    typed = last_user_text(body)
    if typed.startswith(OPENING):
        return {"text": S1}
    if "queue" in typed:
        return {"text": f"Rabbitmq. {LOG}"}
    return {"text": f"echo: {typed[:40]}"}


def kinds(server: CompactionServer) -> list[str]:
    out = []
    for seen in server.requests:
        first = seen.body["messages"][0]
        text = json.dumps(first["content"])
        if "compaction" in seen.body:
            out.append("compaction")
        elif first["role"] == "assistant" and '"compaction"' in text:
            out.append("signed-first")
        elif OPENING in json.dumps(seen.body["messages"][-1]):
            out.append("summary")
        else:
            out.append("restored" if "CONTEXT RESTORATION" in text else "chat")
    return out


def test_compact_with_the_provider_engine_then_replay_then_edit(
        compaction_server: Server, tmp_path: Path) -> None:
    server, url = compaction_server
    server.chat = answer
    summaries = iter([S1, S2])
    server.summary = lambda body: next(summaries)
    out, code, err = rollchat(url, tmp_path, "which queue for jobs?\nhow do jobs retry?\n"
                              "compact\nhow many retries?\nsummary edit\nand alerts?\nexit\n",
                              VISUAL="sed -i s/zulu/xray/")
    assert code == 0, err
    assert kinds(server) == ["chat", "chat", "compaction", "signed-first", "signed-first",
                             "restored", "compaction"]
    bodies = [s.body for s in server.requests]
    # the compaction request is the chat's request: same system prompt, tools, messages
    assert bodies[2]["system"] == bodies[1]["system"]
    assert bodies[2].get("tools") == bodies[1].get("tools")
    assert [m["role"] for m in bodies[2]["messages"]] == ["user", "assistant"] * 2
    instructions = bodies[2]["compaction"]["instructions"]
    assert instructions.startswith(OPENING) and "in at most 500 words" in instructions
    # billed mostly as cache reads: the conversation the chat's requests cached
    billed = server.requests[2].billed
    assert billed is not None and billed.read > 5 * (billed.uncached + billed.written)
    # the restoration and the next turn start with the signed block, as the server sent it
    signed = bodies[3]["messages"][0]["content"][0]
    assert signed["content"] == S1 and signed["type"] == "compaction"
    assert bodies[4]["messages"][0] == bodies[3]["messages"][0]
    # the summary once: in the block, not again in the restoration message after it
    restoring = json.dumps(bodies[3]["messages"][1:])
    assert "use rabbitmq 3.13" not in restoring and "compaction block just before" in restoring
    # after `summary edit`, rollchat's summary as edited, without the block
    assert "xray" in json.dumps(bodies[5]["messages"][0]) and '"compaction"' not in \
        json.dumps(bodies[5]["messages"])
    assert "signed compaction block was dropped" in out
    assert "Summary: " in out and "cache reads" in out  # what the summary cost
    assert "compaction failed" not in out
    files = {p.stem: p.read_text() for p in (tmp_path / "sessions").glob("*.md")}
    [child] = [t for t in files.values() if "Provider block" in t]  # kept in the transcript
    assert sign(S1) in child and "Resumed From" in child
    parsed = [parse(t) for t in files.values()]
    assert sorted(t.summary.topics[0] for t in parsed if t.summary) == [
        "picking a queue for jobs", "retry policy"]


def test_a_compaction_error_falls_back_to_rollchats_summary_and_says_so(
        compaction_server: Server, tmp_path: Path) -> None:
    server, url = compaction_server
    server.chat = answer
    server.failures.append("compaction_nothing_to_summarize")  # not transient: not retried
    out, code, err = rollchat(url, tmp_path, "which queue for jobs?\ncompact\nexit\n")
    assert code == 0, err
    assert kinds(server)[:4] == ["chat", "compaction", "summary", "restored"]
    assert out.count("The provider's compaction failed") == 1
    assert "compaction_nothing_to_summarize" in out and "rollchat wrote the summary instead" in out
    assert '"compaction"' not in json.dumps(server.requests[3].body["messages"])


def test_a_provider_without_compaction_says_so_once(tmp_path: Path) -> None:
    cfg = write_config(tmp_path / "rollchat.yml", config("provider"))
    done = run_piped(tmp_path, "hello\ncompact\nagain\nexit\n", "--config", str(cfg),
                     "--provider", "offline", env=clean_env(tmp_path / "home"))
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("has no server-side compaction") == 1


def test_the_rollchat_engine_reads_the_conversation_from_the_cache(
        compaction_server: Server, tmp_path: Path) -> None:
    server, url = compaction_server
    server.chat = answer
    out, code, err = rollchat(url, tmp_path, "which queue for jobs?\nhow do jobs retry?\n"
                              "compact\nexit\n", engine="rollchat")
    assert code == 0, err
    assert "cache reads" in out and "compaction" not in server.requests[2].body
    assert kinds(server)[:4] == ["chat", "chat", "summary", "restored"]
    billed = server.requests[2].billed  # uncached: the last answer and the instruction
    assert billed is not None and billed.read > 4 * billed.uncached and billed.written == 0
