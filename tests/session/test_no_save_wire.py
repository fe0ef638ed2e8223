"""``--no-save`` against the real OpenAI SDK and a local wire server: the chat's answers are the
only requests; the summary written at exit would be thrown away, so it is never asked for."""

from __future__ import annotations

import json
from pathlib import Path

from tests.e2e import clean_env, run_piped
from tests.wire_servers import WireServer, openai_server, text

__all__ = ["openai_server"]


def _env(tmp_path: Path, server: WireServer) -> dict[str, str]:
    return clean_env(tmp_path / "home", ROLLCHAT_PROVIDER="openai", ROLLCHAT_BASE_URL=server.url,
                     ROLLCHAT_MODEL="gpt-4o-mini", OPENAI_API_KEY="sk-test")


def test_no_save_exit_makes_no_summary_call(tmp_path: Path, openai_server: WireServer) -> None:
    openai_server.push(text("First answer."), text("Second answer."))
    result = run_piped(tmp_path, "hello\nand again\n", "--no-save",
                       env=_env(tmp_path, openai_server))
    assert result.returncode == 0, result.stderr
    assert "First answer." in result.stdout and "Second answer." in result.stdout
    said = [json.dumps(r.body["messages"][-1]) for r in openai_server.requests]
    assert "hello" in said[0] and "and again" in said[1]
    assert len(openai_server.requests) == 2  # no summary, no memory extraction
    assert "was kept in memory only (--no-save): nothing was written" in result.stdout
    assert not (tmp_path / "sessions").exists()


def test_a_saved_chat_still_summarizes_at_exit(tmp_path: Path, openai_server: WireServer) -> None:
    """The other side of the same rule: without ``--no-save`` the exit asks for its summary."""
    openai_server.push(text("First answer."))
    result = run_piped(tmp_path, "hello\n", "--exit-summary", "model",  # "hello" alone: local
                       env=_env(tmp_path, openai_server))
    assert result.returncode == 0, result.stderr
    assert len(openai_server.requests) >= 2
