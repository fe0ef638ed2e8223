"""Small things a user meets in a chat (issue 25.6), driven through piped chats: ``summary``
drawn as answers are, ``help`` naming the agents to hand over to, ``model``."""

from __future__ import annotations

from pathlib import Path

import pytest

from rollchat.storage.transcript import parse
from tests.e2e import HELPER_AGENT, clean_env, run_piped, write_config
from tests.mcp_helpers import free_port


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
    assert "agents: assistant, reviewer" in line
    alone = run_piped(tmp_path, "help\n")  # one agent: nobody to hand over to
    assert "@NAME" not in alone.stdout


@pytest.mark.parametrize("no_save", [False, True], ids=["saved", "no-save"])
def test_after_a_refused_local_server_the_exit_summary_is_local_said_once(
        tmp_path: Path, no_save: bool) -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    done = run_piped(tmp_path, "hello there\n", "--provider", "openai", "--model", "m",
                     "--base-url", url, "--exit-summary", "model",  # ("hello": local anyway)
                     *(["--no-save"] if no_save else []),
                     env=clean_env(tmp_path / "home", OPENAI_API_KEY="test"))
    out = " ".join((done.stdout + done.stderr).split())
    assert done.returncode == 0, out
    assert out.count("Connection refused") == 1  # the answer's error; the summary never asked
    assert "summary failed" not in out and "saved instead" not in out
    if no_save:  # no summary at all; one wording for what --no-save did, no claim of a save
        assert "was kept in memory only (--no-save): nothing was written" in out
        assert "saved" not in out.lower().replace("nothing was saved", "")
    else:
        assert "The summary is the local one (the model was not asked" in out
        [path] = (tmp_path / "sessions").glob("*.md")
        assert parse(path.read_text()).summary is not None  # resumable all the same


HELPER = HELPER_AGENT


def test_the_offline_model_runs_a_tool_asked_for_in_plain_words(tmp_path: Path) -> None:
    (tmp_path / "helper.py").write_text(HELPER)
    lines = ["count the words in the quick brown fox", 'how many words are in "a b c"?',
             "Can you count the words of: one two", "I want to count words later"]
    done = run_piped(tmp_path, "\n".join(lines) + "\n", "helper.py", "--yes")
    assert done.returncode == 0, done.stderr
    banner = done.stdout.split("You:")[0]
    assert "calls the agent's tools when asked in plain words" in banner and "use TOOL {" in banner
    assert "rollchat init-agent" in banner  # where a tool to try comes from
    [path] = (tmp_path / "sessions").glob("*.md")
    calls = [[(t.call.name, dict(t.call.arguments)) for t in turn.tools]
             for turn in parse(path.read_text()).turns]
    assert calls == [[("word_count", {"text": "the quick brown fox"})],
                     [("word_count", {"text": "a b c"})],
                     [("word_count", {"text": "one two"})],
                     []]  # a statement, not a request: no call
    assert "4 words" in done.stdout and "3 words" in done.stdout
