"""The one path that summarizes a saved transcript (compaction/saved.py): resuming a session
with no summary, ``rollchat compact ID``, ``rollchat import`` and the MCP server's
compact_session all take it, with the same choices: the same summary model (a summary provider
named without a model uses its own default model), and on the cheap path the newest turns,
grouped from the newest, go to the model."""

from __future__ import annotations

import asyncio
import json
import os
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from rollchat.cli.app import build_cli
from rollchat.compaction.saved import summary_choice
from rollchat.compaction.summarizer import Summarizer
from rollchat.config.load import load_config
from rollchat.config.settings import ConfigOverrides, SummaryConfig
from rollchat.domain import Turn, Usage, answer_blocks
from rollchat.storage.store import SessionStore
from tests.compact_fixtures import OFFLINE_CONFIG
from tests.wire_servers import WireServer, openai_server, text

__all__ = ["openai_server"]

WHEN = datetime(2026, 1, 5, 9, 0, tzinfo=timezone.utc)
TURNS = 301  # not a multiple of the turns one summary request holds: one group is partial
FILLER = "lorem ipsum dolor sit amet " * 12


def _texts(i: int) -> tuple[str, str]:
    return f"[{i}] step {i} of the migration: {FILLER}", f"Done [{i}]. {FILLER}"


def _config(tmp_path: Path, url: str) -> Path:
    path = tmp_path / "rollchat.yml"
    path.write_text("agents:\n  assistant:\n    provider: openai\n"
                    f"    base_url: {url}\n    model: small-window\n"
                    "    max_output_tokens: 512\n"
                    "models:\n  small-window:\n    context_window: 8192\n"
                    "  offline:\n    context_window: 8192\n"
                    "summary:\n  provider: offline\n" + OFFLINE_CONFIG, encoding="utf-8")
    return path


def _crashed(root: Path) -> str:
    """A session with TURNS queries and no summary, as a crash leaves it."""
    store = SessionStore(root)
    store.ensure()
    live = store.new_session(agent_key="assistant", agent="Assistant",
                             agent_path="config:assistant", model="small-window",
                             provider="openai", now=WHEN, resumed_from=None,
                             previous_session=None)
    for i in range(TURNS):
        user, answer = _texts(i)
        live.append_turn(Turn("query", i + 1, WHEN, user, answer_blocks(answer), usage=Usage(30,
                                                                                             20)),
                         "Assistant")
    live.close()
    return live.session_id


def _claude_code_file(path: Path) -> Path:
    """The same conversation as a Claude Code session file."""
    rows = []
    for i in range(TURNS):
        user, answer = _texts(i)
        at = (WHEN + timedelta(seconds=i)).isoformat().replace("+00:00", "Z")
        rows += [{"type": "user", "timestamp": at,
                  "message": {"role": "user", "content": user}},
                 {"type": "assistant", "timestamp": at,
                  "message": {"role": "assistant", "content": [{"type": "text",
                                                                 "text": answer}]}}]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path


Seen = list[dict[str, Any]]


@pytest.fixture
def seen(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Seen:
    """Every Summarizer.summarize call: its model, chunks and model calls."""
    calls: Seen = []
    original = Summarizer.summarize

    def spy(self: Summarizer, turns: list[Turn], *args: Any, **kwargs: Any) -> Any:
        calls.append({"model": self.model, "chunks": kwargs.get("chunks"),
                      "model_calls": kwargs.get("model_calls"),
                      "newest_first": [c[::-1] for c in self.plan(turns[::-1])[::-1]]})
        return original(self, turns, *args, **kwargs)

    monkeypatch.setattr(Summarizer, "summarize", spy)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.chdir(tmp_path)
    return calls


def _resume(tmp_path: Path, server: WireServer) -> None:
    root, config = tmp_path / "sessions", _config(tmp_path, server.url)
    sid = _crashed(root)
    server.push(text("Restored, ready."))
    done = CliRunner().invoke(build_cli(), ["--config", str(config), "--sessions-dir", str(root),
                                        "--resume", sid], input="exit\n")
    assert done.exit_code == 0, done.output
    assert "summarized locally" in done.output


def _compact(tmp_path: Path, server: WireServer) -> None:
    root, config = tmp_path / "sessions", _config(tmp_path, server.url)
    sid = _crashed(root)
    done = CliRunner().invoke(build_cli(), ["compact", sid, "--json", "--sessions-dir", str(root),
                                        "--config", str(config)])
    assert done.exit_code == 0, done.output
    out = json.loads(done.stdout)
    assert out["model"] == "offline:offline"
    assert any("summarized locally" in note for note in out["notes"]), out["notes"]


def _import(tmp_path: Path, server: WireServer) -> None:
    config = _config(tmp_path, server.url)
    source = _claude_code_file(tmp_path / "claude.jsonl")
    done = CliRunner().invoke(build_cli(), ["import", str(source), "--sessions-dir",
                                        str(tmp_path / "sessions"), "--config", str(config)])
    assert done.exit_code == 0, done.output
    assert "summarized by offline (its last part; the rest locally)" in done.stdout


def _mcp(tmp_path: Path, server: WireServer) -> None:
    from mcp import Client

    from rollchat.compaction.saved import summary_model
    from rollchat.server.mcp import build_server

    root, config = tmp_path / "sessions", _config(tmp_path, server.url)
    sid = _crashed(root)
    cfg = load_config(config_path=config, env=os.environ, cwd=tmp_path,
                      overrides=ConfigOverrides(sessions_dir=root))
    mcp = build_server(cfg, summary_model(cfg, os.environ))

    async def ask() -> Any:
        async with Client(mcp) as client:
            return await client.call_tool("compact_session", {"session": sid})

    result = asyncio.run(ask())
    assert not result.is_error
    out = json.loads("".join(b.text for b in result.content if b.type == "text"))
    assert out["model"] == "offline:offline"


@pytest.mark.parametrize("caller", [_resume, _compact, _import, _mcp],
                         ids=["resume", "compact", "import", "mcp"])
def test_every_caller_summarizes_with_the_same_model_and_the_newest_chunks(
        caller: Any, tmp_path: Path, seen: Seen, openai_server: WireServer) -> None:
    caller(tmp_path, openai_server)
    [call] = seen
    assert call["model"] == "offline"  # summary.provider's default, not the chat's model
    assert call["model_calls"] == 1  # the cheap path: nobody agreed to dozens of calls
    chunks = call["chunks"]
    assert len(chunks) > 5
    # grouped from the newest turn: the model's part is a full request, ending at the newest
    assert [t.user for t in chunks[-1]] == [t.user for t in call["newest_first"][-1]]
    assert chunks[-1][-1].user.startswith(f"[{TURNS - 1}]")
    assert len(chunks[-1]) > len(chunks[0])  # the partial group is the oldest, done locally


def test_a_summary_provider_without_a_model_uses_its_own_default_model() -> None:
    offline = SummaryConfig(provider="offline")
    assert summary_choice(offline, "openai", "gpt-4o") == ("offline", "offline")
    assert summary_choice(SummaryConfig(provider="openai"), "openai", "gpt-4o") == \
        ("openai", "gpt-4o")  # the chat's own provider: the chat's model
    assert summary_choice(SummaryConfig(), "anthropic", "claude-x") == ("anthropic", "claude-x")
    assert summary_choice(SummaryConfig(provider="anthropic", model="claude-y"), "openai",
                          "gpt-4o") == ("anthropic", "claude-y")


def test_the_chats_provider_needs_no_key_when_another_writes_the_summaries(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`rollchat import` and `compact ID` only call the summary provider: an Anthropic agent
    with no key, summarized offline, imports as it did before the paths were made one."""
    config = tmp_path / "rollchat.yml"
    config.write_text("agents:\n  assistant:\n    provider: anthropic\n"
                      "summary:\n  provider: offline\n" + OFFLINE_CONFIG, encoding="utf-8")
    source = _claude_code_file(tmp_path / "claude.jsonl")
    done = CliRunner().invoke(build_cli(), ["import", str(source), "--sessions-dir",
                                            str(tmp_path / "sessions"), "--config", str(config)])
    assert done.exit_code == 0, done.output
    assert "summarized by offline" in done.stdout
    config.write_text(config.read_text().replace("summary:\n  provider: offline\n", ""))
    refused = CliRunner().invoke(build_cli(), ["import", str(source), "--again",
                                               "--sessions-dir", str(tmp_path / "sessions"),
                                               "--config", str(config)])
    assert refused.exit_code == 1 and "ANTHROPIC_API_KEY" in refused.output, refused.output
