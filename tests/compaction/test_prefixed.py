"""Summary requests that reuse the chat's cached prefix: what they carry reads back whole (the
offline model summarizes from it), and a summary that goes to another model keeps the separate
request (no cache to share), checked on the wire."""

from __future__ import annotations

from pathlib import Path

from rollchat.compaction.prefixed import OPENING, build_prefixed_request, read_summary_request
from rollchat.compaction.request import SUMMARY_SYSTEM_PROMPT
from rollchat.domain import Message, Summary, Text, ToolCall, ToolResult, ToolUse
from rollchat.memory.layers import with_block
from rollchat.providers.base import ChatRequest, ToolSpec
from tests.e2e import clean_env, run_piped, write_config
from tests.wire_servers import WireServer, openai_server, text

__all__ = ["openai_server"]  # the fixture, imported for pytest

PARENT = Summary("We chose rabbitmq.", ("queues",), ("use rabbitmq 3.13",), ("benchmark it",))


def test_a_prefixed_request_reads_back_as_the_conversation_it_holds() -> None:
    call = ToolCall("c1", "grep", {"pattern": "retry"})
    messages = (Message("user", "CONTEXT RESTORATION: ..."), Message("assistant", "Ready."),
                Message("user", with_block("<context>\nNow: noon\n</context>", "how do we retry?")),
                Message("assistant", "Let me look.", tool_calls=(call,)),
                Message("tool", "retry.py:3: backoff", tool_call_id="c1", name="grep"),
                Message("assistant", "With backoff."))
    prefix = ChatRequest("m", "You are the agent.", messages, 500,
                         tools=(ToolSpec("grep", "search", {"type": "object"}),),
                         cache_prefix_messages=2)
    request = build_prefixed_request(prefix, parent_summary=PARENT, focus="the retries",
                                     max_words=120, max_output_tokens=400)
    assert request.messages[:-1] == messages and request.tools == prefix.tools
    assert request.system == prefix.system and request.purpose == "summary"
    assert request.messages[-1].content.startswith(OPENING)
    data = read_summary_request(request)
    [turn] = data.turns  # the restored exchange is the parent's summary, not a turn
    assert turn.user == "how do we retry?"
    assert turn.blocks == (Text("Let me look."), ToolUse(call),
                           ToolResult("c1", "retry.py:3: backoff"), Text("With backoff."))
    assert data.parent_summary == PARENT and data.focus == "the retries"
    assert data.max_words == 120


def test_a_summary_on_another_model_is_a_separate_request(openai_server: WireServer,
                                                          tmp_path: Path) -> None:
    # (on_exit: model, as a chat this short is otherwise summarized locally at exit)
    cfg = write_config(tmp_path / "rollchat.yml",
                       "summary:\n  model: cheap-model\n  on_exit: model\n")
    openai_server.push(text("Use blue-green."), text("not a summary"), text("still not"))
    done = run_piped(tmp_path, "how do we deploy?\nexit\n", "--config", str(cfg),
                     "--provider", "openai", "--model", "test-model",
                     "--base-url", openai_server.url,
                     env=clean_env(tmp_path / "home", OPENAI_API_KEY="test"))
    assert done.returncode == 0, done.stderr
    chat, summary = openai_server.bodies[:2]
    assert chat["model"] == "test-model" and summary["model"] == "cheap-model"
    assert summary["messages"][0] == {"role": "system", "content": SUMMARY_SYSTEM_PROMPT}
    assert "tools" not in summary
