"""The default model of each provider, no model configured (issue 34 item 6): a tool turn, a
compaction and the exit go through the whole chat (tool loop, summary side call, restoration,
memory extraction) with the whole CLI in process and the real SDKs, against the local wire
servers holding requests to the documented rules of that model: claude-sonnet-5-5 thinks by
default (signed thinking sent back before tool results: tests/wire_thinking.py) and refuses
sampling parameters, forced tool use and prefill; gpt-5.4-mini, a reasoning model, refuses a
temperature other than 1 and an effort it does not take (tests/wire_servers.py
``param_refusal``, tests/wire_responses.py ``sampling_refusal``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rollchat.cli.app import build_cli
from rollchat.memory.extract import EXTRACT_SYSTEM
from rollchat.providers.names import ANTHROPIC, DEFAULT_MODELS, OPENAI, OPENAI_RESPONSES
from rollchat.storage.transcript import parse
from tests.compaction.test_autocompact import summary_text
from tests.e2e import COUNT_WORDS, agent_file
from tests.wire_responses import ResponsesServer, calling, said
from tests.wire_servers import AnthropicDialect, OpenAIDialect, WireServer, text, tool

AGENT = agent_file(
    '"""A test agent with one tool it may run without asking, and no model named."""\n'
    'name = "Counter"\nallow = ["count_words"]', COUNT_WORDS, "tools = [count_words]")
SUMMARY = summary_text(60, marker="counted three words with the tool")
# after the compaction, one more question: the exit extracts its facts (waited for)
INPUT = "count the words of one two three\ncompact\nand what is a word?\nexit\n"
WORD = "A run of letters between spaces."


@pytest.fixture
def chat_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``tmp_path`` as the working directory: an agent file, a config with no model and no
    retries (a refusal shows at once), its sessions directory."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "counter.py").write_text(AGENT, encoding="utf-8")
    (tmp_path / "rollchat.yml").write_text(
        "retry:\n  max_retries: 0\nmemory:\n  extract_timeout_seconds: 120\n", encoding="utf-8")
    return tmp_path


def run_chat(monkeypatch: pytest.MonkeyPatch, env: dict[str, str], *args: str) -> str:
    """The chat, input piped, in process; its output (the run must end with exit code 0)."""
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    argv = ["--agent-file", "counter.py", "--config", "rollchat.yml", "--sessions-dir",
            "sessions", "--trust-input", *args]  # trusted: memory extracts from piped input
    result = CliRunner().invoke(build_cli(), argv, input=INPUT)
    assert result.exit_code == 0, result.output
    return result.output


def assert_compacted_with_the_models_summary(chat_dir: Path, model: str, output: str) -> None:
    """The session saved: the tool turn on ``model``, then the model's own summary (not the
    local one); the child's context restored by the model."""
    [parent] = [p for p in (parse(f.read_text(encoding="utf-8"))
                            for f in (chat_dir / "sessions").glob("*.md")) if p.summary
                 and not p.header.resumed_from]
    assert parent.header.model == model, parent.header.model
    [turn] = parent.turns
    assert turn.assistant == "Three words."
    assert [(t.call.name, t.result) for t in turn.tools] == [("count_words", "3")]
    assert parent.summary is not None and not parent.summary.fallback  # the model's, not local
    assert "counted three words with the tool" in " ".join(parent.summary.topics)
    assert "Ready to continue." in output, output  # the restoration's acknowledgment
    assert WORD in output, output  # the child's question answered


@pytest.fixture
def thinker() -> Iterator[WireServer]:
    """A Messages server whose model thinks unless told otherwise (as claude-sonnet-5-5)."""
    with WireServer(AnthropicDialect(thinks=True)) as server:
        yield server


def test_the_default_claude_model_runs_a_tool_turn_and_a_compaction(
        thinker: WireServer, chat_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    thinker.push(tool("count_words", {"text": "one two three"}, tool_id="c1",
                      thought="Count them with the tool."),
                 text("Three words.", thought="The tool said 3."),
                 text(SUMMARY), text("Ready to continue."), text(WORD))
    output = run_chat(monkeypatch, {"ANTHROPIC_API_KEY": "k",
                                    "ANTHROPIC_BASE_URL": thinker.url})
    model = DEFAULT_MODELS[ANTHROPIC]
    assert model == "claude-sonnet-5-5"
    assert f"{model} via anthropic" in output
    assert thinker.rejected == [] and thinker.refused_params == [], output
    assert thinker.extractions, output  # memory extracted (its refusals: refused_params)
    bodies = thinker.bodies
    assert {b.get("model") for b in bodies} == {model}  # the chat, summary, restoration, memory
    for body in bodies:  # what the model refuses is never sent
        assert not {"temperature", "top_p", "top_k", "tool_choice"} & set(body), body
        assert (body.get("thinking") or {}).get("type") in (None, "adaptive"), body
        assert body["messages"][-1]["role"] == "user"  # no prefill
    # the tool result went back after the signed thinking of the call
    assert [b["type"] for b in bodies[1]["messages"][1]["content"]] == ["thinking", "tool_use"]
    assert_compacted_with_the_models_summary(chat_dir, model, output)


@pytest.fixture
def openai_wire() -> Iterator[WireServer]:
    with WireServer(OpenAIDialect()) as server:
        yield server


def test_the_default_openai_model_runs_a_tool_turn_and_a_compaction(
        openai_wire: WireServer, chat_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Chat Completions at a compatible server (OPENAI_BASE_URL): the default model is sent
    without a temperature or an effort it does not take; the output limit a compatible
    server reads (``max_tokens``), refused by this one for a reasoning model, is learned once
    (``max_completion_tokens`` then, for every call of the run)."""
    openai_wire.push(tool("count_words", {"text": "one two three"}, tool_id="c1"),
                     text("Three words."), text(SUMMARY), text("Ready to continue."), text(WORD))
    output = run_chat(monkeypatch, {"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": openai_wire.url})
    model = DEFAULT_MODELS[OPENAI]
    assert model == "gpt-5.4-mini"
    assert f"{model} via openai" in output
    refused = [(b.get("model"), sorted(set(b) & {"max_tokens", "temperature", "top_p",
                                                 "reasoning_effort"}))
               for b in openai_wire.refused_params]
    assert refused in ([], [(model, ["max_tokens"])]), refused  # at most once, then learned
    assert {b.get("model") for b in openai_wire.bodies} == {model}
    assert openai_wire.extractions, output
    for body in openai_wire.bodies:
        assert "temperature" not in body and "top_p" not in body, body
    assert_compacted_with_the_models_summary(chat_dir, model, output)


@pytest.fixture
def responses_wire() -> Iterator[ResponsesServer]:
    server = ResponsesServer().start()
    try:
        yield server
    finally:
        server.stop()


def test_the_default_responses_model_runs_a_tool_turn_and_a_compaction(
        responses_wire: ResponsesServer, chat_dir: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The Responses API (what auto picks for the default model at OpenAI itself), named with
    no model: its reasoning is asked and carried, nothing it refuses is sent."""
    responses_wire.push(calling(("c1", "count_words", {"text": "one two three"}),
                                reasoning=True, summary="Count them."),
                        said("Three words."), said(SUMMARY), said("Ready to continue."),
                        said(WORD))
    output = run_chat(monkeypatch, {"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": responses_wire.url},
                      "--provider", OPENAI_RESPONSES)
    model = DEFAULT_MODELS[OPENAI_RESPONSES]
    assert model == DEFAULT_MODELS[OPENAI]
    assert f"{model} via openai-responses" in output
    assert responses_wire.refused == [], responses_wire.refused
    bodies = [b for _, b in responses_wire.requests]
    assert {b.get("model") for b in bodies} == {model}
    assert any(b.get("instructions") == EXTRACT_SYSTEM for b in bodies)  # memory's extraction
    for body in bodies:
        assert "temperature" not in body and "top_p" not in body, body
    assert_compacted_with_the_models_summary(chat_dir, model, output)
