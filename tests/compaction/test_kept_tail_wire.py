"""What an automatic compaction keeps, against wire servers that refuse orphan tool messages
as real providers do: the kept tail never splits a tool call from its result, the archive tool
reads the current parent after a second compaction, and a turn with no answer is never carried.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from rollchat.domain import Thinking
from rollchat.providers.base import ToolSpec
from rollchat.session.state import CARRIED_PREFIX
from rollchat.storage.transcript import parse
from rollchat.tools import ARCHIVE_TOOL_NAME, Tool
from tests.compaction.test_autocompact_wire import (
    WINDOW,
    Script,
    Session,
    ends_with_tool_result,
    realistic,
    send,
    start,
    texts_of,
    tool_names,
)
from tests.wire_servers import (
    AnthropicDialect,
    OpenAIDialect,
    Reply,
    WireServer,
    error,
    last_user_text,
    tool,
)

LOOKUP = ToolSpec("lookup", "Look up an invoice.", {"type": "object", "properties": {
    "id": {"type": "string"}}})


class ToolScript(Script):
    """The model calls ``lookup`` whenever the user says "look up" (and after a compaction
    reads the archive when asked), else answers as Script does."""

    def __call__(self, body: dict[str, Any]) -> Reply:
        user = last_user_text(body)
        if not ends_with_tool_result(body) and "look up" in user and "lookup" in tool_names(body):
            self.calls += 1
            return tool("lookup", {"id": user[:12]}, tool_id=f"call_{self.calls:03d}")
        return super().__call__(body)


@pytest.fixture(params=["openai", "anthropic"])
def strict_server(request: pytest.FixtureRequest) -> Iterator[WireServer]:
    dialect = OpenAIDialect() if request.param == "openai" else AnthropicDialect()
    with WireServer(dialect, window=WINDOW, responder=ToolScript(), strict_tools=True) as s:
        yield s


def with_lookup(session: Session) -> Session:
    def run(arguments: Mapping[str, object]) -> str:
        return f"invoice {arguments.get('id')}: paid, " + "line item detail " * 40
    session.app.session.engine.tools["lookup"] = Tool(LOOKUP, run)
    return session


def children(session: Session) -> list[Any]:
    files = sorted(session.built.store.root.glob("*.md"))
    return [t for t in (parse(p.read_text()) for p in files) if t.header.resumed_from]


def test_tool_calls_in_the_kept_tail_stay_with_their_results(
        tmp_path: Path, strict_server: WireServer) -> None:
    session = with_lookup(start(tmp_path, strict_server))
    i = 0
    while len(session.built.compactions) < 2:
        message = realistic(i) + (" and look up its invoice" if i % 2 else "")
        turn = send(session, message)
        assert turn.status == "ok", (i, turn.error)  # an orphan would be a 400 here
        i += 1
        assert i < 150
    assert strict_server.rejected == []
    kept = [t for child in children(session) for t in child.turns if t.kind == "carried"]
    assert any(t.tools for t in kept)  # tool exchanges really were in kept tails


def test_the_archive_tool_reads_the_current_parent_after_a_second_compaction(
        tmp_path: Path, strict_server: WireServer) -> None:
    session = start(tmp_path, strict_server)
    i = 0
    while len(session.built.compactions) < 2:
        assert send(session, realistic(i)).status == "ok"
        i += 1
        assert i < 120
    parent_id = session.app.session.state.resumed_from
    first_child = [c for c in children(session) if c.header.session_id == parent_id]
    assert first_child, "the current parent is the first child"
    only_there = [t.user for t in first_child[0].turns if t.kind == "query"]
    assert send(session, "Check the archive: what did we decide about the Redis cache TTL?"
                ).status == "ok"
    [body] = [b for b in strict_server.bodies if ends_with_tool_result(b)]
    result = texts_of(body)
    assert f"session {parent_id}" in result
    grandparent = [t for t in session.built.store.root.glob("*.md")
                   if not parse(t.read_text()).header.resumed_from]
    assert f"session {grandparent[0].stem}" not in result
    assert only_there  # the first child had queries of its own, which is what it read
    assert ARCHIVE_TOOL_NAME in tool_names(body)


def test_a_turn_with_no_answer_is_never_carried(tmp_path: Path,
                                                strict_server: WireServer) -> None:
    session = start(tmp_path, strict_server)
    i = 0
    while True:
        if session.app.session.estimate() > 0.7 * session.app.session.budget.tokens:
            break
        assert send(session, realistic(i)).status == "ok"
        i += 1
    lost = f"[{i}] this message gets no answer"
    script = strict_server.responder
    assert script is not None

    def refuse_lost(body: dict[str, Any]) -> Reply:
        if last_user_text(body) == lost:
            return error(400, "unknown parameter foo")  # no answer for this one
        return script(body)

    strict_server.responder = refuse_lost
    assert send(session, lost).status == "unanswered"
    while not session.built.compactions:
        i += 1
        assert send(session, realistic(i)).status == "ok"
    [child] = children(session)
    carried = [t for t in child.turns if t.context.startswith(CARRIED_PREFIX)]
    assert carried and all(t.status == "ok" and t.assistant for t in carried)
    assert lost not in [t.user for t in carried]
    after = [b for b in strict_server.bodies if last_user_text(b) == realistic(i)]
    assert after and lost not in texts_of(after[-1])
    parent = [p for p in session.built.store.root.glob("*.md")
              if not parse(p.read_text()).header.resumed_from]
    assert lost in parent[0].read_text()  # kept in the parent, marked unanswered


def test_a_kept_tail_on_a_model_that_binds_its_thinking_is_not_refused(
        tmp_path: Path) -> None:
    """claude-sonnet-5-5 binds each thinking block to what precedes it; after a compaction
    the summary replaces that, so thinking kept in the carried turns would be refused (HTTP 400,
    "bound to a different conversation": tests/wire_thinking.py). The docs' fix for a summary
    the API did not write: remove the thinking of the kept turns."""
    with WireServer(AnthropicDialect(thinks=True), window=WINDOW, responder=ToolScript(),
                    strict_tools=True) as server:
        session = with_lookup(start(tmp_path, server, model="claude-sonnet-5-5"))
        i = 0
        while len(session.built.compactions) < 2:
            message = realistic(i) + (" and look up its invoice" if i % 2 else "")
            turn = send(session, message)
            assert turn.status == "ok", (i, turn.error)
            i += 1
            assert i < 150
        assert server.rejected == []
        kept = [t for child in children(session) for t in child.turns if t.kind == "carried"]
        assert kept and any(isinstance(b, Thinking) for t in kept for b in t.blocks)
