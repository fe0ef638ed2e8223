"""Provider faults end to end: the real CLI (piped) against the local wire-format servers.

Each fault gets its own user line; the line after it must be answered and saved. The server
counts the requests each line caused, so retries (and their absence) are checked.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from rollchat.domain import Turn
from rollchat.memory.layers import split_block
from rollchat.storage.transcript import parse
from tests.e2e import clean_env, run_piped, write_config
from tests.wire_servers import (
    AnthropicDialect,
    Dialect,
    OpenAIDialect,
    Reply,
    WireServer,
    drop,
    error,
    garbage,
    last_user_text,
    stall,
    text,
    truncated,
)

CONFIG = """\
retry:
  request_timeout: 1
  max_retries: 1
  base_delay: 0.05
summary:
  provider: offline
ui:
  offline_word_delay: 0
"""
RETRY_AFTER = 0.4


class ScriptedServer(WireServer):
    """Replies chosen by the request's last user line (echo when none is scripted left);
    records when each request arrived."""

    def __init__(self, dialect: Dialect, script: dict[str, list[Reply]]) -> None:
        super().__init__(dialect)
        self.script = {line: list(replies) for line, replies in script.items()}
        self.arrivals: list[tuple[str, float]] = []

    def next_reply(self, body: dict[str, Any]) -> Reply:
        line = last_user_text(body)
        with self._lock:
            self.arrivals.append((line, time.monotonic()))
            pending = self.script.get(line)
            if pending:
                return pending.pop(0)
        return text(f"echo: {line}")

    def count(self, line: str) -> int:
        return sum(1 for seen, _ in self.arrivals if seen == line)


@dataclass(frozen=True)
class Fault:
    """One scripted fault: the line sent, the replies, and what must follow."""

    line: str
    replies: tuple[Reply, ...]
    status: str  # the turn's status in the transcript
    message: str  # the one-line error shown and recorded ("" for none)
    requests: int  # requests the server gets for this line
    answer: str = ""  # the (partial) text kept


def _overloaded() -> Reply:
    return error(529, "Overloaded", error_type="overloaded_error")


def faults(anthropic: bool) -> list[Fault]:
    # Frames before the text: OpenAI sends a role chunk; Anthropic message_start,
    # content_block_start and a ping.
    lead = 3 if anthropic else 1
    return [
        Fault("dropped mid-stream", (drop("partial answer here", lead + 2),), "error",
              "connection lost: peer closed connection", 1, "partial answer"),
        Fault("dropped before any text", (drop("never seen", lead), text("second try")),
              "ok", "", 2, "second try"),
        Fault("malformed stream", (garbage(),), "unanswered", "malformed response", 1),
        Fault("truncated stream", (truncated("cut short text"),), "error",
              "malformed response", 1, "cut short text"),
        Fault("stalled before headers", (stall(30), stall(30)), "unanswered",
              "request timed out", 2),
        Fault("stalled mid-answer", (stall(30, lead + 1, "slow partial text"),), "error",
              "request timed out", 1, "slow p"),
        Fault("rate limited", (error(429, "slow down", headers={
            "retry-after": str(RETRY_AFTER)}), text("after the wait")), "ok", "", 2,
              "after the wait"),
        Fault("overloaded", (_overloaded(), _overloaded()), "unanswered",
              "provider overloaded: HTTP 529", 2),
        Fault("server error", (error(500, "boom"), error(500, "boom")), "unanswered",
              "provider server error: HTTP 500: boom", 2),
        Fault("bad key", (error(401, "invalid x-api-key"),), "unanswered",
              "authentication failed: HTTP 401", 1),
        Fault("no usage", (text("answer without usage", usage=False),), "ok", "", 1,
              "answer without usage"),
    ]


@dataclass
class Run:
    server: ScriptedServer
    screen: str
    stderr: str
    code: int
    turns: list[Turn]


def _run(tmp_path: Path, dialect: Dialect, script: list[Fault]) -> Run:
    anthropic = isinstance(dialect, AnthropicDialect)
    lines = [x for f in script for x in (f.line, f"after {f.line}")]
    server = ScriptedServer(dialect, {f.line: list(f.replies) for f in script})
    cfg = write_config(tmp_path / "rollchat.yml", CONFIG)
    key = ("ANTHROPIC_API_KEY", "sk-ant-test") if anthropic else ("OPENAI_API_KEY", "sk-test")
    env = clean_env(tmp_path / "home", **{key[0]: key[1]})
    with server:
        done = run_piped(tmp_path, "\n".join(lines) + "\n", "--config", str(cfg),
                         "--provider", "anthropic" if anthropic else "openai",
                         "--model", "test-model", "--base-url", server.url, env=env)
    files = sorted((tmp_path / "sessions").glob("*.md"))
    assert len(files) == 1, (done.stdout, done.stderr)
    transcript = parse(files[0].read_text(encoding="utf-8"))
    return Run(server, " ".join(done.stdout.split()), done.stderr, done.returncode,
               [t for t in transcript.turns if t.kind == "query"])


# One worker runs the module (--dist loadgroup): the chat of each dialect, a module fixture,
# runs once, not once on every worker that gets one of its tests.
pytestmark = pytest.mark.xdist_group("faults")


@pytest.fixture(scope="module", params=["openai", "anthropic"])
def run(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
        ) -> Iterator[tuple[Run, list[Fault]]]:
    anthropic = request.param == "anthropic"
    script = faults(anthropic)
    dialect: Dialect = AnthropicDialect() if anthropic else OpenAIDialect()
    yield _run(tmp_path_factory.mktemp(request.param), dialect, script), script


def test_session_survives_every_fault(run: tuple[Run, list[Fault]]) -> None:
    result, script = run
    assert result.code == 0, result.stderr
    assert "Traceback" not in result.stderr + result.screen
    assert [t.user for t in result.turns] == [x for f in script
                                              for x in (f.line, f"after {f.line}")]
    assert "Saved session" in result.screen


@pytest.mark.parametrize("index", range(len(faults(False))))
def test_fault(run: tuple[Run, list[Fault]], index: int) -> None:
    result, script = run
    fault = script[index]
    turn, after = result.turns[2 * index], result.turns[2 * index + 1]
    assert turn.user == fault.line
    assert turn.status == fault.status, turn
    assert turn.assistant == fault.answer
    assert result.server.count(fault.line) == fault.requests
    if fault.message:
        assert turn.error is not None and turn.error.startswith(fault.message), turn.error
        assert f"Error: {fault.message}" in result.screen
    else:
        assert turn.error is None
    if fault.status == "unanswered":
        assert "Your message was kept" in result.screen
    if fault.line == "bad key":  # no point sending it again: the hint names the key
        assert "Check the API key" in result.screen
    # The chat goes on: the next line is answered and saved.
    assert (after.status, after.assistant) == ("ok", f"echo: after {fault.line}")
    assert result.server.count(f"after {fault.line}") == 1


def _next_body(result: Run, line: str) -> dict[str, Any]:
    return next(r.body for r in result.server.requests
                if last_user_text(r.body) == f"after {line}")


def _contents(body: dict[str, Any]) -> list[str]:
    """Each message's text; a user message's without its context block (date, memory)."""
    out = []
    for m in body["messages"]:
        content = m.get("content")
        if isinstance(content, list):
            content = "".join(b.get("text", "") for b in content if isinstance(b, dict))
        out.append(split_block(content or "")[1] if m.get("role") == "user" else content or "")
    return out


def test_partial_answer_is_sent_next_time_and_unanswered_is_not(
        run: tuple[Run, list[Fault]]) -> None:
    result, _ = run
    sent = _contents(_next_body(result, "dropped mid-stream"))
    assert "dropped mid-stream" in sent
    assert any(c.startswith("partial answer") for c in sent)
    sent = _contents(_next_body(result, "server error"))
    assert "server error" not in sent  # an unanswered message is kept only in the transcript
    assert "after rate limited" in _contents(_next_body(result, "bad key"))


def test_rate_limit_waits_for_retry_after(run: tuple[Run, list[Fault]]) -> None:
    result, _ = run
    times = [t for line, t in result.server.arrivals if line == "rate limited"]
    assert len(times) == 2
    assert times[1] - times[0] >= RETRY_AFTER  # a lower bound: sleep never returns early
    assert f"retrying in {RETRY_AFTER:.1f}s (attempt 1)" in result.screen


def test_no_usage_is_recorded_as_zero_tokens(run: tuple[Run, list[Fault]]) -> None:
    result, script = run
    index = [f.line for f in script].index("no usage")
    turn = result.turns[2 * index]
    assert (turn.usage.input_tokens, turn.usage.output_tokens) == (0, 0)
    assert result.turns[2 * index + 1].usage.input_tokens == 11
