"""The docs stay true: the session-file example parses, and the in-chat commands table is the
registry's (the README's set-up commands: tests/test_docs_setup.py)."""

from __future__ import annotations

import re
from pathlib import Path

from rollchat.storage.transcript import parse
from rollchat.ui import commands

DOCS = Path(__file__).resolve().parents[2] / "docs"
FILE_FORMAT = (DOCS / "file-format.md").read_text(encoding="utf-8")
COMMANDS = (DOCS / "commands.md").read_text(encoding="utf-8")


def test_session_file_example_parses_back() -> None:
    block = re.search(r"```markdown\n(# .*? Conversation\n.*?)```", FILE_FORMAT, re.DOTALL)
    assert block is not None
    t = parse(block.group(1))
    assert t.header.resumed_from and t.header.previous_session
    assert [turn.kind for turn in t.turns] == ["restored", "query"] and t.summary is not None


def test_in_chat_commands_table_matches_the_registry() -> None:
    table = re.search(r"^\| command \| what it does \|\n(?:\|.*\n)+", COMMANDS, re.MULTILINE)
    assert table is not None  # (the page's other tables, e.g. a saved prompt's keys, are not it)
    rows = re.findall(r"^\| `([a-z]+)", table.group(0), re.MULTILINE)
    assert set(rows) == {name for name in commands.COMMANDS if name != "quit"}

