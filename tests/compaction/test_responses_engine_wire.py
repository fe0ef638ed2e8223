"""compaction.engine: provider on the Responses API in a whole chat (rollchat run as a
subprocess, the real openai SDK, tests/wire_responses.py): ``responses.compact`` gives the
window, the readable summary is asked on the chat's prefix, the window goes first on the
restoration and the turns after it, byte for byte; a failed compaction falls back to
rollchat's summary and says so."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rollchat.compaction.prefixed import OPENING
from rollchat.storage.transcript import SUMMARY_END, SUMMARY_START, parse
from tests.e2e import clean_env, run_piped, write_config
from tests.wire_responses import (
    Answer,
    Compaction,
    ResponsesServer,
    last_user_text,
    responses_server,
    said,
)

__all__ = ["responses_server"]  # the fixture, imported for pytest

# The engine's wiring (Summarizer -> compaction/server.py -> provider.compact, the window on the
# restoration) comes with the anthropic branch; until it is on main these tests skip. Both pass
# on a merge of the two branches.
pytest.importorskip("rollchat.compaction.server")

S1 = (f"{SUMMARY_START}\n**Background Context:** Initial session.\n\n"
      "**Current Session Summary:**\n**Topics Discussed:**\n- picking a queue for jobs\n\n"
      "**Decisions Made:**\n- use rabbitmq 3.13\n\n**Pending:**\n- benchmark the consumer\n"
      f"{SUMMARY_END}")
CONFIG = """\
agents:
  assistant:
    name: Assistant
    system_prompt: You are the wire test agent.
    compaction:
      engine: provider
retry:
  max_retries: 0
"""


def summaries(body: dict[str, Any]) -> Answer | None:
    """A summary in rollchat's format when asked for one, with reasoning as a model gives."""
    return said(S1, reasoning=True) if last_user_text(body).startswith(OPENING) else None


def rollchat(server: ResponsesServer, tmp_path: Path, lines: str) -> str:
    server.responder = summaries
    cfg = write_config(tmp_path / "rollchat.yml", CONFIG)
    done = run_piped(tmp_path, lines, "--config", str(cfg), "--provider", "openai-responses",
                     "--model", "gpt-5-mini", "--base-url", server.url,
                     env=clean_env(tmp_path / "home", OPENAI_API_KEY="sk-test"))
    assert done.returncode == 0, done.stdout + done.stderr
    return " ".join(done.stdout.split())


def dumped(items: list[dict[str, Any]]) -> list[str]:
    return [json.dumps(i, separators=(",", ":"), ensure_ascii=False) for i in items]


def test_compact_through_responses_compact_then_the_window_goes_first(
        responses_server: ResponsesServer, tmp_path: Path) -> None:
    responses_server.compactions.append(Compaction(input_tokens=900, cached=800))
    out = rollchat(responses_server, tmp_path, "which queue for jobs?\nhow do jobs retry?\n"
                                               "compact\nhow many retries?\n")
    assert "compaction failed" not in out
    _, turn2, summary, restoring, turn3 = responses_server.bodies()[:5]
    [compacting] = responses_server.bodies("/v1/responses/compact")[:1]
    # the compaction and the readable summary both start with the chat's own input
    assert dumped(compacting["input"])[:len(turn2["input"])] == dumped(turn2["input"])
    assert compacting["instructions"] == turn2["instructions"]
    assert dumped(summary["input"][:-1]) == dumped(compacting["input"])
    assert last_user_text(summary).startswith(OPENING)
    assert summary.get("tools") == turn2.get("tools")
    # the window, as /v1/responses/compact returned it, goes first, then the readable summary
    kinds = [i.get("type") for i in restoring["input"]]
    assert kinds[:3] == ["message", "message", "compaction"]
    assert restoring["input"][2]["encrypted_content"] in responses_server.issued
    assert S1.split("\n")[1] in json.dumps(restoring["input"][3])
    assert dumped(turn3["input"])[:len(restoring["input"])] == dumped(restoring["input"])
    files = [p.read_text(encoding="utf-8") for p in (tmp_path / "sessions").glob("*.md")]
    [child] = [t for t in files if "**Resumed From:**" in t]
    # the window kept in the child's transcript, and beside the parent's summary block
    assert all(restoring["input"][2]["encrypted_content"] in t for t in files)
    parent = next(parse(t) for t in files if t is not child)
    assert parent.summary is not None and parent.summary.topics == ("picking a queue for jobs",)
    assert parent.summary.signed is not None and parent.summary.signed.type == "compacted"


def test_a_failed_compaction_falls_back_to_rollchats_summary_and_says_so(
        responses_server: ResponsesServer, tmp_path: Path) -> None:
    responses_server.compactions.append(Compaction(status=400, message="compaction is not "
                                                   "available for this model"))
    out = rollchat(responses_server, tmp_path, "which queue for jobs?\ncompact\nmore?\n")
    assert out.count("The provider's compaction failed") == 1
    assert "not available for this model" in out and "rollchat wrote the summary" in out
    restoring = responses_server.bodies()[2]
    assert "compaction" not in [i.get("type") for i in restoring["input"]]
    assert S1.split("\n")[1] in json.dumps(restoring["input"])
