"""compact and resume against the local OpenAI and Anthropic wire-format servers, with rollchat
run as a subprocess: the request bodies the servers record prove what reaches the model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pexpect
import pytest

from rollchat.compaction.policy import ACK_TOKENS
from rollchat.compaction.prefixed import OPENING
from rollchat.compaction.request import SUMMARY_SYSTEM_PROMPT, reply_tokens
from rollchat.memory.layers import split_block
from rollchat.storage.transcript import FALLBACK_NOTE, SUMMARY_END, SUMMARY_START, parse
from tests.e2e import PROMPT, clean_env, run_piped, spawn, write_config
from tests.wire_servers import (
    WireServer,
    anthropic_server,
    error,
    garbage,
    openai_server,
    stall,
    text,
)

__all__ = ["anthropic_server", "openai_server"]

CONFIG = """\
agents:
  assistant:
    name: Assistant
    system_prompt: You are the wire test agent.
retry:
  max_retries: 0
summary:
  timeout_seconds: 20
  on_exit: model  # these short chats test the model's exit summary (auto: the local one)
"""
SYSTEM = "You are the wire test agent."
SUMMARY_WORDS = 500  # summary.max_words by default (the window is large: no smaller budget)


def block(background: str, topic: str, decision: str, pending: str) -> str:
    return (f"{SUMMARY_START}\n**Background Context:** {background}\n\n"
            f"**Current Session Summary:**\n**Topics Discussed:**\n- {topic}\n\n"
            f"**Decisions Made:**\n- {decision}\n\n**Pending:**\n- {pending}\n{SUMMARY_END}")


S1 = block("Initial session.", "picking a queue for jobs", "use rabbitmq 3.13",
           "benchmark the zulu consumer")
S2 = block("The first session chose rabbitmq for jobs.", "retry policy for jobs",
           "retry 5 times with backoff", "wire the yankee alert")


def rollchat(server: WireServer, tmp_path: Path, lines: str,
             *args: str) -> tuple[str, str, int]:
    cfg = write_config(tmp_path / "rollchat.yml", CONFIG)
    if server.url.endswith("/v1"):
        env = clean_env(tmp_path / "home", OPENAI_API_KEY="test")
        flags = ["--provider", "openai"]
    else:
        env = clean_env(tmp_path / "home", ANTHROPIC_API_KEY="test")
        flags = ["--provider", "anthropic"]
    done = run_piped(tmp_path, lines, "--config", str(cfg), *flags, "--model", "test-model",
                     "--base-url", server.url, *args, env=env)
    return " ".join(done.stdout.split()), done.stderr, done.returncode


def conversation(body: dict[str, Any]) -> tuple[str, list[tuple[str, str]]]:
    """(system prompt, [(role, text)]) of a request body in either dialect."""
    def flat(content: Any) -> str:
        if isinstance(content, str):
            return content
        return "".join(b.get("text", "") for b in content or [] if isinstance(b, dict))

    messages = [(m["role"], flat(m.get("content"))) for m in body["messages"]]
    if "system" in body:
        return flat(body["system"]), messages
    system = [text for role, text in messages if role == "system"]
    return "".join(system), [(r, t) for r, t in messages if r != "system"]


def purpose(body: dict[str, Any]) -> str:
    system, messages = conversation(body)
    if system == SUMMARY_SYSTEM_PROMPT or (messages and messages[-1][1].startswith(OPENING)):
        return "summary"
    if messages and messages[0][1].startswith("CONTEXT RESTORATION"):
        return "restore" if len(messages) == 1 else "chat-after-restore"
    return "chat"


def files(tmp_path: Path) -> dict[str, Any]:
    return {p.stem: parse(p.read_text()) for p in (tmp_path / "sessions").glob("*.md")}


@pytest.mark.parametrize("server_name", ["openai_server", "anthropic_server"])
def test_compact_and_resume_send_only_what_they_should(
        server_name: str, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    server: WireServer = request.getfixturevalue(server_name)
    server.push(text("Rabbitmq is a fine choice."), text("Jobs retry with backoff."),
                text(S1), text("Acknowledged: we picked rabbitmq. Ready to continue."),
                text("Five retries then."), text(S2))
    out, err, code = rollchat(server, tmp_path, "which queue for jobs? rabbitmq?\n"
                              "how do jobs retry?\ncompact keep the queue details\n"
                              "how many retries?\nexit\n")
    assert code == 0, err
    bodies = server.bodies
    assert [purpose(b) for b in bodies] == ["chat", "chat", "summary", "restore",
                                            "chat-after-restore", "summary"]
    # the summary request starts as the last chat request did (its cached prefix: the same
    # system prompt, tools and messages, then the answer), the instruction last
    system, summary_messages = conversation(bodies[2])
    last_system, last_chat = conversation(bodies[1])
    assert system == last_system == SYSTEM and bodies[2].get("tools") == bodies[1].get("tools")
    assert summary_messages[:-1] == [*last_chat, ("assistant", "Jobs retry with backoff.")]
    assert "keep the queue details" in summary_messages[-1][1]  # the focus text
    assert summary_messages[-1][1].startswith(OPENING)
    assert bodies[3].get("tools") == bodies[4].get("tools")  # the restoration's prefix too
    # side calls are bounded: the summary by what a reply may hold, the acknowledgment small
    assert bodies[1]["max_tokens"] == 4096 and bodies[3]["max_tokens"] == ACK_TOKENS
    assert bodies[2]["max_tokens"] == reply_tokens(SUMMARY_WORDS, None, 4096) < 4096
    for body in (bodies[0], bodies[1], bodies[3], bodies[4]):
        system, messages = conversation(body)
        assert system == SYSTEM
        assert all(OPENING not in t for _, t in messages)

    restore_prompt = conversation(bodies[3])[1][0][1]
    assert S1 in restore_prompt
    system, after = conversation(bodies[4])
    block, typed = split_block(after[2][1])  # the turn's context block, then what was typed
    assert block.startswith("<context>\nNow: ") and typed == "how many retries?"
    after[2] = ("user", typed)
    assert after == [("user", restore_prompt),
                     ("assistant", "Acknowledged: we picked rabbitmq. Ready to continue."),
                     ("user", "how many retries?")]
    assert "Acknowledged: we picked rabbitmq" in out and "Saved session: " in out
    exit_summary = conversation(bodies[5])[1]
    assert exit_summary[:-1] == [*conversation(bodies[4])[1], ("assistant", "Five retries then.")]
    assert "use rabbitmq 3.13" in exit_summary[-1][1]  # the parent's decisions to carry
    assert all("how do jobs retry?" not in t for _, t in exit_summary)  # only n-1

    found = files(tmp_path)
    [child] = [t for t in found.values() if t.header.resumed_from]
    parent = found[child.header.resumed_from]
    assert parent.summary.topics == ("picking a queue for jobs",)
    assert child.summary.topics == ("retry policy for jobs",)
    assert child.header.previous_session == f"{parent.header.session_id}.md"

    server.requests.clear()
    server.push(text("Acknowledged: retries and the yankee alert."), text("Alerting next."),
                text(S2.replace("yankee", "xray")))
    out, err, code = rollchat(server, tmp_path, "what about alerts?\nexit\n", "--resume", "1")
    assert code == 0, err
    assert [purpose(b) for b in server.bodies] == ["restore", "chat-after-restore", "summary"]
    assert server.bodies[0].get("tools") == server.bodies[1].get("tools")
    resume_prompt = conversation(server.bodies[0])[1][0][1]
    assert S2 in resume_prompt and resume_prompt.count(SUMMARY_START) == 1
    assert "zulu" not in resume_prompt and "rabbitmq 3.13" not in resume_prompt  # only n-1
    assert f"This session was resumed from: {parent.header.session_id}" in resume_prompt
    assert "restoring the context, 18 for summaries)" in out  # 11 in, 7 out: the summary


@pytest.mark.parametrize("bad", [garbage(), error(400, "summaries are not allowed here"),
                                 text(f"{SUMMARY_START}\nHere is your summary: it went fine.")])
def test_a_failed_summary_call_falls_back_and_says_so(
        openai_server: WireServer, tmp_path: Path, bad: Any) -> None:
    openai_server.push(text("Use the blue-green deploy."), bad, bad)
    out, err, code = rollchat(openai_server, tmp_path, "how do we deploy?\nexit\n")
    assert code == 0, err
    assert [purpose(b) for b in openai_server.bodies] == ["chat", "summary", "summary"]
    assert "The model's summary failed" in out and "the local summary is used instead" in out
    [t] = files(tmp_path).values()
    assert t.summary is not None and t.summary.fallback
    [path] = (tmp_path / "sessions").glob("*.md")
    assert FALLBACK_NOTE in path.read_text()
    assert "how do we deploy" in " ".join(t.summary.topics + t.summary.pending).lower()


def test_ctrl_c_while_the_exit_summary_stalls_writes_the_fallback(
        openai_server: WireServer, tmp_path: Path) -> None:
    cfg = write_config(tmp_path / "rollchat.yml", CONFIG)
    openai_server.push(text("Kafka has partitions."), stall(30))
    env = clean_env(tmp_path / "home", OPENAI_API_KEY="test")
    child = spawn(tmp_path, "--config", str(cfg), "--base-url", openai_server.url,
                  "--model", "test-model", env=env, forked=True)  # (a Ctrl-C, not a start)
    child.expect_exact(PROMPT)
    child.sendline("tell me about kafka partitions")
    child.expect("Tokens")
    child.expect_exact(PROMPT)
    child.sendline("exit")
    child.expect("Generating session summary")
    while len(openai_server.requests) < 2:  # the summary call has reached the server
        child.expect([pexpect.TIMEOUT], timeout=0.05)
    child.sendintr()
    child.expect("the local summary is used instead")
    child.expect("Goodbye!")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    [t] = files(tmp_path).values()
    assert [turn.user for turn in t.turns] == ["tell me about kafka partitions"]
    assert t.turns[0].assistant == "Kafka has partitions."
    assert t.summary is not None and t.summary.fallback and t.header.total_queries == 1
    items = " ".join(t.summary.topics + t.summary.pending).lower()
    assert "tell me about kafka partitions" in items
