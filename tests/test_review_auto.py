"""Review of automatic-compaction control and cost, as users meet them: a refusal with
automatic compaction off, prices of model ids the table does not list exactly, prices set in
the config for a model family."""

from __future__ import annotations

from pathlib import Path

from tests.e2e import clean_env, run_piped, write_config
from tests.wire_servers import WireServer, openai_server

__all__ = ["openai_server"]

KEY = "sk-test-key-0123456789"


def test_auto_off_and_a_refusal_says_to_compact_not_to_shorten_the_message(
        tmp_path: Path, openai_server: WireServer) -> None:
    """With auto_compact off, once the conversation outgrows the real window every message
    is refused: the hint names the way out (compact), not a shorter message."""
    openai_server.window, openai_server.counting = 1500, True
    config = write_config(tmp_path / "c.yml", "models:\n  gpt-4o-mini:\n"
                          "    context_window: 100000\nsession:\n  auto_compact: false\n")
    line = "The billing pipeline runs on Tuesdays and we rotate the keys monthly. " * 12
    messages = "".join(f"{line} {i}\n" for i in range(5))
    done = run_piped(tmp_path, messages, "--config", str(config), "--model", "gpt-4o-mini",
                     "--base-url", openai_server.url,
                     env=clean_env(tmp_path / "home", OPENAI_API_KEY=KEY))
    assert done.returncode == 0, done.stderr
    assert openai_server.rejected  # the conversation did outgrow the window
    assert "Shorten or split the message" not in done.stdout
    assert done.stdout.count("automatic compaction is off: type 'compact' (or 'auto on')") \
        == len(openai_server.rejected)
    [path] = (tmp_path / "sessions").glob("*.md")
    assert path.read_text().count("**You:** The billing pipeline") == 5  # none lost
