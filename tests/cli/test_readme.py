"""The README stays true: its session-file example parses, and its commands exist."""

from __future__ import annotations

import re
from pathlib import Path

from rollchat.storage.transcript import parse
from rollchat.ui import commands

README = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")


def test_session_file_example_parses_back() -> None:
    block = re.search(r"```markdown\n(# .*? Conversation\n.*?)```", README, re.DOTALL)
    assert block is not None
    t = parse(block.group(1))
    assert t.header.resumed_from and t.header.previous_session
    assert [turn.kind for turn in t.turns] == ["restored", "query"] and t.summary is not None


def test_in_chat_commands_table_matches_the_registry() -> None:
    rows = re.findall(r"^\| `([a-z]+)", README, re.MULTILINE)
    assert set(rows) == {name for name in commands.COMMANDS if name != "quit"}


def test_ci_runs_the_readme_test_command() -> None:
    ci = (Path(__file__).resolve().parents[2] / ".ci" / "run").read_text()
    assert "<!-- test-command -->" in README and "test-command" in ci
