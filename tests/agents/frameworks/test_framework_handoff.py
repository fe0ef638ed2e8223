"""Handoff between a framework agent and a rollchat agent, both ways (``@NAME``), in process:
the chat built as ``rollchat`` builds it from a config whose ``agents:`` name the Pydantic AI
example agent by its file (its real OpenAI client at the local wire server) and a rollchat
agent on the offline model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rollchat.domain import ToolResult, ToolUse
from rollchat.storage.transcript import parse
from tests.framework_agents import one_worker
from tests.session.test_handoff import handed_block, start
from tests.wire_servers import WireServer, last_user_text, openai_server, text, tool

__all__ = ["openai_server"]

pytestmark = one_worker("pydantic-ai")  # (Pydantic AI imported in one worker)

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "pydantic_ai_agent" / "agent.py"


def summary_or(reply: str) -> Any:
    """The wire server's replies: a summary when one is asked, else ``reply``."""
    def respond(body: dict[str, Any]) -> Any:
        said = last_user_text(body)
        if "<summary-request>" in said or said.startswith("Summarize the session"):
            return text("<session-summary>\n**Background Context:** adding numbers.\n"
                        "</session-summary>")
        return text(reply)
    return respond


def test_handoff_to_a_framework_agent_and_back(tmp_path: Path, openai_server: WireServer,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("pydantic_ai")
    monkeypatch.setenv("OPENAI_BASE_URL", openai_server.url)
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    chat = start(tmp_path, monkeypatch, agents=f"  adder:\n    name: Adder\n"
                                                f"    file: {EXAMPLE}\n")
    chat.line("we decided to use redis for the cache on port 6380")
    [a_file] = chat.files("assistant_")

    # to the framework agent: it gets the handed context in its own messages, runs its tool
    openai_server.push(tool("add", {"a": 6300, "b": 80}), text("6380 it is."))
    chat.line("@adder please add 6300 and 80")
    assert chat.app.session.agent.key == "adder"
    assert "6380 it is." in chat.output
    first, second = openai_server.bodies[:2]
    assert first["messages"][0] == {"role": "system", "content": (
        "You add numbers with the add tool and answer briefly.")}
    asked = str(first["messages"][-1]["content"])
    assert "redis" in asked and asked.endswith("please add 6300 and 80")
    assert [m["content"] for m in second["messages"] if m["role"] == "tool"] == ["6380"]
    [b_file] = chat.files("adder_")
    b = parse(b_file.read_text(encoding="utf-8"))
    assert b.header.handed_from == a_file.stem
    assert [type(x) for x in b.turns[0].blocks][:2] == [ToolUse, ToolResult]

    # and back: the framework agent's own model writes the summary handed to the other agent
    openai_server.responder = summary_or("unused")
    chat.line("@assistant thanks, over to you")
    assert chat.app.session.agent.key == "assistant"
    back = chat.models["assistant"].chats()[-1]
    assert "adding numbers" in handed_block(back)
    assert back.messages[-1].content.endswith("thanks, over to you")
    summary_asks = [b for b in openai_server.bodies[2:] if "tools" not in b]
    assert summary_asks, "the summary was not written through the framework agent's model"

    chat.app.exit()
    b = parse(b_file.read_text(encoding="utf-8"))
    assert [t.kind for t in b.turns] == ["query", "handoff"]
    assert b.turns[-1].context.startswith(f"Handed to Architect ({a_file.stem})")
