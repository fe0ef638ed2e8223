"""A server that is busy for a while is said once: the first retry is shown with its wait, the
later ones are quiet (issue 28: retried with backoff, said once), and the answer comes."""

from __future__ import annotations

from pathlib import Path

from tests.e2e import clean_env, run_piped
from tests.wire_servers import WireServer, error, openai_server, text

__all__ = ["openai_server"]


def test_a_busy_server_is_said_once(tmp_path: Path, openai_server: WireServer) -> None:
    busy = error(503, "server is busy", headers={"retry-after": "0"})
    openai_server.push(busy, busy, busy, text("Here at last."))
    env = clean_env(tmp_path / "home", ROLLCHAT_PROVIDER="openai",
                    ROLLCHAT_BASE_URL=openai_server.url, ROLLCHAT_MODEL="gpt-4o-mini",
                    OPENAI_API_KEY="sk-test")
    result = run_piped(tmp_path, "hello\n", "--no-save", env=env)
    assert result.returncode == 0, result.stderr
    screen = result.stdout + result.stderr
    assert "Here at last." in screen
    assert screen.count("retrying in") == 1 and "(attempt 1)" in screen
    assert "(attempt 2)" not in screen and "(attempt 3)" not in screen
    assert len(openai_server.requests) == 4
