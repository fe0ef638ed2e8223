"""Automatic compaction against the local OpenAI and Anthropic wire-format servers in counting
mode (every prompt counted with cl100k, a 4,000-token window enforced with the provider's own
context-length error): long sessions, the trigger, the kept tail, tool pairing, the archive
tool, the context-too-long retry, chunked summaries and Anthropic cache breakpoints."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from rollchat.compaction.prefixed import OPENING
from rollchat.config.settings import SessionConfig
from rollchat.domain import Message, Turn
from rollchat.events import AnswerStarted, Event, Planned
from rollchat.providers.anthropic import AnthropicProvider
from rollchat.providers.openai import OpenAIProvider
from rollchat.session.state import CARRIED_PREFIX
from rollchat.storage.transcript import parse
from rollchat.tools import ARCHIVE_TOOL_NAME
from rollchat.ui.app import ChatApp
from tests.compaction.test_autocompact import (
    COUNTER,
    SYSTEM,
    TOPICS,
    Built,
    build_app,
    summary_text,
)
from tests.wire_servers import (
    AnthropicDialect,
    OpenAIDialect,
    Reply,
    WireServer,
    last_user_text,
    text,
    too_long,
    tool,
)

WINDOW = 4000
SHORT = ("ok, next: {t}", "and {t}?", "noted about {t}", "{t} looks fine now",
         "let's go with the plan for {t}")
LONG = ("Here is what I found while reading {t}: the worker pulls a batch of 50 invoices, "
        "retries each failed charge three times with exponential backoff, then writes a row "
        "to failed_charges with the Stripe error code. We decided to keep the batch size. "
        "Could you double-check whether the lock on the invoices table is held across the "
        "retries, because that would explain the slow nightly run?")


def realistic(i: int) -> str:
    """Turn ``i`` of a varied session: mostly short messages, now and then a long one."""
    topic = TOPICS[(i * 7) % len(TOPICS)]
    template = LONG if i % 5 == 2 else SHORT[i % len(SHORT)]
    return f"[{i}] " + template.format(t=topic)


def system_of(body: dict[str, Any]) -> str:
    system = body.get("system")
    if isinstance(system, list):
        return "".join(b.get("text", "") for b in system)
    first = (body.get("messages") or [{}])[0]
    return str(first.get("content")) if first.get("role") == "system" else str(system or "")


def is_summary(body: dict[str, Any]) -> bool:
    """A summary request: its own system prompt, or the chat's prefix and the instruction
    (compaction/prefixed.py)."""
    last = body["messages"][-1]
    content = last.get("content")
    said = content if isinstance(content, str) else "".join(
        b.get("text", "") for b in content or [] if isinstance(b, dict))
    return system_of(body).startswith("You write the summary") or (
        last.get("role") == "user" and said.startswith(OPENING))


def ends_with_tool_result(body: dict[str, Any]) -> bool:
    last = body["messages"][-1]
    if last.get("role") == "tool":
        return True
    content = last.get("content")
    return isinstance(content, list) and any(b.get("type") == "tool_result" for b in content)


def tool_names(body: dict[str, Any]) -> set[str]:
    return {(t.get("function") or t)["name"] for t in body.get("tools") or []}


@dataclass
class Script:
    """The model behind the server: valid summaries, acknowledgments, short answers, and an
    archive lookup when the user mentions the archive and the tool is offered."""

    answer: Callable[[str], str] = lambda user: (
        f"About {user[:50]!r}: I read the handler and the migration. The retry loop holds "
        "the row lock while it sleeps, which explains the slow nightly run; I would release "
        "it before the backoff, add a test for the partial refund path, and measure again.")
    calls: int = 0

    def __call__(self, body: dict[str, Any]) -> Reply:
        if is_summary(body):
            return text(summary_text(60, marker="summarized"))
        if ends_with_tool_result(body):
            return text("I checked the previous session's transcript; see above.")
        user = last_user_text(body)
        if user.startswith("CONTEXT RESTORATION"):
            return text("Restored the summary: invoices, retries, tests. Ready to continue.")
        if "archive" in user and ARCHIVE_TOOL_NAME in tool_names(body):
            self.calls += 1
            return tool(ARCHIVE_TOOL_NAME, {"query": "Redis cache TTL"},
                        tool_id=f"toolu_{self.calls:03d}")
        return text(self.answer(user))


@dataclass
class Step:
    pending: str
    estimate: int
    exact: int
    compacted: bool
    baseline_after: int | None  # context.last_prompt_tokens right after this step's check
    full_count_after: int  # a full local count right after it
    estimate_after: int  # app.estimate() right after it


@dataclass
class Session:
    server: WireServer
    built: Built
    steps: list[Step] = field(default_factory=list)

    @property
    def app(self) -> ChatApp:
        return self.built.app

    def chat_bodies(self) -> list[dict[str, Any]]:
        return [b for b in self.server.bodies if not system_of(b).startswith("You write the")]


def exact_size(app: ChatApp, pending: Message) -> int:
    """The cl100k count of the request that would be sent now (hygiene applied)."""
    engine = app.session.engine
    request = engine.request([*engine.context.messages, pending])
    return COUNTER.count_messages(request.system, request.messages, request.tools)


def send(session: Session, message: str) -> Turn:
    """Send ``message`` and record the step: the estimate the policy saw, the exact size, and
    the figures right after any compaction, as the model call starts."""
    core = session.app.session
    pending = Message("user", message)
    exact = exact_size(session.app, pending)
    planned: list[Planned] = []
    after: list[tuple[int | None, int, int]] = []

    def watch(event: Event) -> None:
        if isinstance(event, Planned):
            planned.append(event)
        elif isinstance(event, AnswerStarted) and not after:
            ctx = core.engine.context
            specs = [t.spec for t in core.engine.tools.values()]
            after.append((ctx.last_prompt_tokens,
                          COUNTER.count_messages(ctx.system, [*ctx.messages, pending], specs),
                          core.estimate([pending])))

    before = len(session.built.compactions)
    turn = session.built.send(message, watch)
    session.steps.append(Step(message, planned[0].estimate, exact,
                              len(session.built.compactions) > before, *after[0]))
    return turn


def make_provider(server: WireServer) -> OpenAIProvider | AnthropicProvider:
    if isinstance(server.dialect, OpenAIDialect):
        return OpenAIProvider("test-model", api_key="sk-test", base_url=server.url, timeout=10)
    return AnthropicProvider("test-model", api_key="sk-test", base_url=server.url, timeout=10)


@pytest.fixture(params=["openai", "anthropic"])
def counting_server(request: pytest.FixtureRequest) -> Iterator[WireServer]:
    dialect = OpenAIDialect() if request.param == "openai" else AnthropicDialect()
    with WireServer(dialect, window=WINDOW, responder=Script()) as server:
        yield server


def start(tmp_path: Path, server: WireServer, **kw: Any) -> Session:
    built = build_app(tmp_path, make_provider(server), **kw)
    session = Session(server, built)
    return session


def send_all(session: Session, messages: list[str]) -> None:
    for message in messages:
        turn = send(session, message)
        assert turn.status == "ok", (message, turn.error)


# ---------------------------------------------------------------- request shape checks


def tool_pairs_intact(body: dict[str, Any]) -> bool:
    """Every tool call is answered right after it, and every result follows its call."""
    messages = body["messages"]
    if isinstance(messages[0].get("content"), list) or "system" in body:  # Anthropic
        for i, m in enumerate(messages):
            blocks = m["content"] if isinstance(m["content"], list) else []
            calls = {b["id"] for b in blocks if b.get("type") == "tool_use"}
            results = {b["tool_use_id"] for b in blocks if b.get("type") == "tool_result"}
            if results:
                prev = messages[i - 1]["content"] if i else []
                asked = {b["id"] for b in prev if isinstance(b, dict)
                         and b.get("type") == "tool_use"}
                if not results <= asked:
                    return False
            if calls:
                nxt = messages[i + 1]["content"] if i + 1 < len(messages) else []
                got = {b.get("tool_use_id") for b in nxt if isinstance(b, dict)}
                if not calls <= got:
                    return False
        return True
    expected: list[str] = []
    for m in messages:
        if m["role"] == "tool":
            if not expected or m["tool_call_id"] != expected.pop(0):
                return False
        elif expected:
            return False
        if m["role"] == "assistant" and m.get("tool_calls"):
            expected = [c["id"] for c in m["tool_calls"]]
    return not expected


def texts_of(body: dict[str, Any]) -> str:
    out: list[str] = []
    for m in body["messages"]:
        content = m.get("content")
        if isinstance(content, str):
            out.append(content)
        for b in content if isinstance(content, list) else []:
            inner = b.get("text") or b.get("content") or ""
            out.append(inner if isinstance(inner, str) else str(inner))
    return "\n".join(out)


# ---------------------------------------------------------------- the long session


def test_sixty_turns_stay_in_the_window_and_compact_at_the_budget(
        tmp_path: Path, counting_server: WireServer) -> None:
    session = start(tmp_path, counting_server)
    budget = session.app.session.budget.tokens
    messages = [realistic(i) for i in range(60)]
    messages[45] = "[45] Check the archive: what did we decide about the Redis cache TTL?"
    send_all(session, messages)

    # No request the server received was above the window; none was refused.
    counts = [r.prompt_tokens for r in counting_server.requests]
    assert counts and all(c is not None and c <= WINDOW for c in counts), max(counts or [0])

    # Compaction happened, each time at the first estimate over the budget.
    steps = session.steps
    compacted = [i for i, s in enumerate(steps) if s.compacted]
    assert len(compacted) >= 2, [s.estimate for s in steps]
    for i in compacted:
        assert steps[i].estimate > budget >= steps[i - 1].estimate_after
        assert abs(steps[i].estimate - steps[i].exact) <= 0.02 * steps[i].exact
        # The baseline was reset: no report yet, and the next estimate is a full count.
        assert steps[i].baseline_after is None
        assert steps[i].estimate_after == steps[i].full_count_after
    assert all(s.estimate <= budget for s in steps if not s.compacted)

    # The system prompt went out in full with every chat and restore request.
    bodies = session.chat_bodies()
    assert all(system_of(b) == SYSTEM for b in bodies)
    assert all(tool_pairs_intact(b) for b in counting_server.bodies)
    check_kept_tail(session, compacted)
    check_archive_read(session)


def check_kept_tail(session: Session, compacted: list[int]) -> None:
    """The first chat request after each compaction holds the last turns word for word, and
    the child transcript records them as carried over."""
    bodies = session.chat_bodies()
    restores = [i for i, b in enumerate(bodies)
                if last_user_text(b).startswith("CONTEXT RESTORATION")]
    assert len(restores) == len(compacted)
    keep = session.app.session.config.session.keep_recent_turns
    for step_index, body_index in zip(compacted, restores, strict=True):
        first = texts_of(bodies[body_index + 1])
        for earlier in session.steps[step_index - keep:step_index]:
            assert earlier.pending in first
        assert session.steps[step_index].pending in first
    files = sorted((session.built.store.root).glob("*.md"))
    children = [parse(p.read_text()) for p in files]
    children = [t for t in children if t.header.resumed_from]
    assert len(children) == len(compacted)
    for child in children:
        carried = [t for t in child.turns if t.context.startswith(CARRIED_PREFIX)]
        assert len(carried) == keep
        assert all(t.kind == "carried" for t in carried)
        assert all(t.user in {s.pending for s in session.steps} for t in carried)
        assert all(child.header.resumed_from in t.context for t in carried)


def check_archive_read(session: Session) -> None:
    """The archive tool's result, sent back to the model, quotes the parent's turns."""
    bodies = [b for b in session.server.bodies if ends_with_tool_result(b)]
    assert len(bodies) == 1
    result = texts_of(bodies[0]).split("Redis cache TTL", 1)[1]
    parent_mentions = [s.pending for s in session.steps[:45] if "Redis cache TTL" in s.pending]
    assert parent_mentions and any(f"You: {m}" in result for m in parent_mentions)


def test_trigger_is_within_two_percent_of_the_budget(
        tmp_path: Path, counting_server: WireServer) -> None:
    """Small steps (about 1% of the budget each): the compaction starts within 2% of it."""
    counting_server.responder = Script(answer=lambda user: f"Noted: {user[:40]}. Next is clear.")
    session = start(tmp_path, counting_server)
    budget = session.app.session.budget.tokens
    send_all(session, [f"[{i}] {LONG.format(t=TOPICS[i % 10])}" for i in range(15)])
    send_all(session, [f"[{i}] {SHORT[i % len(SHORT)].format(t=TOPICS[i % 10])}"
                       for i in range(15, 75)])
    compacted = [s for s in session.steps if s.compacted]
    assert compacted
    for s in compacted:
        assert budget < s.estimate <= 1.02 * budget
        assert budget < s.exact * 1.02  # and the real prompt was there too


# ---------------------------------------------------------------- provider refusals


def test_context_too_long_compacts_and_retries_once(
        tmp_path: Path, counting_server: WireServer) -> None:
    session = start(tmp_path, counting_server)
    send_all(session, [realistic(i) for i in range(6)])
    counting_server.push(too_long(counting_server.dialect, 4100, WINDOW))
    turn = send(session, "[6] please summarise the refund test plan again")
    assert turn.status == "ok"
    asked = [b for b in counting_server.bodies
             if last_user_text(b) == "[6] please summarise the refund test plan again"]
    assert len(asked) == 2  # refused, then sent once more after compacting
    assert len(session.built.compactions) == 1
    assert "context is too long" in session.built.output

    counting_server.responder = refusing("[7] still there?", Script())
    turn = send(session, "[7] still there?")
    assert turn.status == "unanswered"  # refused twice: retried once, no loop
    assert sum(last_user_text(b) == "[7] still there?" for b in counting_server.bodies) == 2
    assert len(session.built.compactions) == 2


def refusing(message: str, script: Script) -> Callable[[dict[str, Any]], Reply]:
    """A model that always answers ``message`` with the context-length error."""
    def respond(body: dict[str, Any]) -> Reply:
        if last_user_text(body) == message and not ends_with_tool_result(body):
            return too_long(OpenAIDialect() if "system" not in body else AnthropicDialect(),
                            4100, WINDOW)
        return script(body)
    return respond


def test_summary_too_big_for_one_request_is_chunked_at_100_percent(
        tmp_path: Path, counting_server: WireServer) -> None:
    window = 2048
    counting_server.window = window
    session = start(tmp_path, counting_server, window=window, max_output=256,
                    session=SessionConfig(auto_compact=False))
    huge = "the reconciliation job log shows invoice {i} retried at 02:{i:02d} " * 25
    send_all(session, [f"[{i}] " + huge.format(i=i) for i in range(4)])
    core = session.app.session
    core.set_auto("on")
    send_all(session, ["[4] " + huge.format(i=4)])
    step = session.steps[-1]
    assert step.compacted and step.estimate >= window  # the prompt would not even fit
    summaries = [r for r in counting_server.requests
                 if system_of(r.body).startswith("You write the summary")]
    assert len(summaries) >= 2  # chunked, oldest first
    assert all(r.prompt_tokens is not None and r.prompt_tokens <= window for r in summaries)
    assert "summary failed" not in session.built.output
    assert all(r.prompt_tokens is not None and r.prompt_tokens <= window
               for r in counting_server.requests)


# ---------------------------------------------------------------- Anthropic prompt caching


def test_anthropic_cache_breakpoints_on_system_restored_prefix_and_last_message(
        tmp_path: Path) -> None:
    with WireServer(AnthropicDialect(), window=WINDOW, responder=Script()) as server:
        session = start(tmp_path, server)
        send_all(session, [realistic(i) for i in range(40)])
    assert session.built.compactions
    bodies = session.chat_bodies()
    assert all(b["system"][-1].get("cache_control") == {"type": "ephemeral"} for b in bodies)
    restores = [i for i, b in enumerate(bodies)
                if last_user_text(b).startswith("CONTEXT RESTORATION")]
    for body in bodies[restores[0] + 1:]:
        prefix_end = body["messages"][1]["content"][-1]
        assert prefix_end.get("cache_control") == {"type": "ephemeral"}
        assert body["messages"][1]["role"] == "assistant"
        assert "Restored the summary" in prefix_end["text"]
        marked = [b for m in body["messages"] for b in m["content"] if "cache_control" in b]
        assert marked == [prefix_end, body["messages"][-1]["content"][-1]]  # and the newest
