"""Small things a user meets in a chat (issue 25.6), driven through piped chats: ``summary``
drawn as answers are, ``help`` naming the agents to hand over to, ``model``."""

from __future__ import annotations

from pathlib import Path

from tests.e2e import run_piped, write_config


def test_summary_is_drawn_as_markdown_like_an_answer(tmp_path: Path) -> None:
    done = run_piped(tmp_path, "we decided to use redis for the cache\ncompact\nsummary\n")
    assert done.returncode == 0, done.stderr
    shown = done.stdout[done.stdout.index("Restored summary (from"):]
    shown = shown[:shown.index("'summary edit'")]
    assert "**" not in shown and "- We decided" not in shown  # no raw markdown
    assert "Decisions Made:" in shown and "• We decided to use redis for the cache" in shown


TWO_AGENTS = """agents:
  assistant:
    name: Architect
  reviewer:
    name: Reviewer
"""


def test_help_lists_handing_over_with_the_configured_agents(tmp_path: Path) -> None:
    cfg = write_config(tmp_path / "two.yml", TWO_AGENTS)
    done = run_piped(tmp_path, "help\n", "--config", str(cfg))
    line = next(x for x in done.stdout.splitlines() if "@NAME" in x)
    assert "agents: assistant, reviewer" in line and "talking to assistant" in line
    alone = run_piped(tmp_path, "help\n")  # one agent: nobody to hand over to
    assert "@NAME" not in alone.stdout
