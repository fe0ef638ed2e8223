"""Fact extraction against the local OpenAI and Anthropic wire-format servers, rollchat run as
a subprocess: the extraction is a separate call (never in the chat's history), its JSON reply
becomes facts shown one line each, and a reply that is not JSON costs one warning. Piped input
is the user speaking only with --trust-input (see memory/keeper.py), which these chats pass."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rollchat.memory.extract import EXTRACT_SYSTEM
from rollchat.memory.store import MemoryStore
from tests.compaction.test_compact_resume_wire import S1, rollchat
from tests.e2e import user_memory
from tests.memory import project_memory
from tests.wire_servers import WireServer, anthropic_server, openai_server, text

__all__ = ["anthropic_server", "openai_server"]

FACTS = [{"text": "prefers rabbitmq for job queues", "category": "preference",
          "confidence": 0.9, "turn": 1},
         {"text": "might like kafka", "category": "preference", "confidence": 0.4}]


@pytest.mark.parametrize("server_name", ["openai_server", "anthropic_server"])
def test_extraction_is_a_separate_call_and_its_facts_are_shown(
        server_name: str, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    server: WireServer = request.getfixturevalue(server_name)
    server.extraction_reply = json.dumps(FACTS)
    server.push(text("Rabbitmq is a fine choice."), text(S1), text("Ready to continue."),
                text("Five retries."))
    out, err, code = rollchat(server, tmp_path, "I'd pick rabbitmq for job queues\ncompact\n"
                              "how many retries?\nexit\n", "--trust-input")
    assert code == 0, err
    assert "Remembered: prefers rabbitmq for job queues (forget 1)" in out
    assert "kafka" not in out  # below the confidence floor
    # at compaction, at exit; the first may be cut for the next chat request and sent again
    # (one request at a time per local server: providers/lanes.py), the same request twice
    sent = list(dict.fromkeys(json.dumps(b, ensure_ascii=False) for b in server.extractions))
    assert len(sent) == 2
    first, second = sent
    assert EXTRACT_SYSTEM in first and "I'd pick rabbitmq for job queues" in first
    assert "how many retries?" in second
    assert "prefers rabbitmq for job queues" in second  # known facts go along, for dedup
    assert out.count("Remembered:") == 1  # the same fact again is not added again
    for chat in server.bodies:  # never part of the chat's history
        assert EXTRACT_SYSTEM not in json.dumps(chat) and "NEW facts" not in json.dumps(chat)
    store = MemoryStore(tmp_path / "sessions", "assistant",
                        user_dir=user_memory(tmp_path / "home"),
                        **project_memory(tmp_path / "home", tmp_path))
    assert [(f.text, f.source_turn) for f in store.facts()] == [
        ("prefers rabbitmq for job queues", 1)]


def test_a_reply_that_is_not_json_costs_one_warning(openai_server: WireServer,
                                                    tmp_path: Path) -> None:
    openai_server.extraction_reply = "I think the user likes rabbitmq!"
    openai_server.push(text("Rabbitmq is a fine choice."), text(S1))
    out, err, code = rollchat(openai_server, tmp_path, "I'd pick rabbitmq for jobs\nexit\n",
                              "--trust-input")
    assert code == 0, err
    assert out.count("Warning:") == 1 and "no facts extracted this time" in out
    assert "Saved session" in out and "Goodbye!" in out
