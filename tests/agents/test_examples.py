"""The README's "Your own agent" walkthrough runs as written, with the example agent."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

from rollchat.storage.transcript import parse
from tests.e2e import run_piped

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def walkthrough() -> tuple[str, list[str]]:
    """(the piped input, the rollchat arguments) of the README's walkthrough command."""
    block = re.search(r"<!-- agent-walkthrough -->\n```console\n\$ (.*?\n)[^ ]", README,
                      re.DOTALL)
    assert block is not None
    command = block.group(1).replace("\\\n", " ")
    printf, _, rollchat = command.partition("|")
    words = shlex.split(printf)
    # after the README's set-up rollchat is .venv/bin/rollchat (tests/test_docs.py runs it so)
    assert words[0] == "printf" and shlex.split(rollchat)[0] == ".venv/bin/rollchat"
    return words[1].encode().decode("unicode_escape"), shlex.split(rollchat)[1:]


def test_the_walkthrough_saves_and_finds_a_note(tmp_path: Path) -> None:
    lines, args = walkthrough()
    args = [str(ROOT / a) if a.endswith(".py") else a for a in args]
    done = run_piped(tmp_path, lines, *args)
    assert done.returncode == 0, done.stderr
    assert "rollchat · Notes" in done.stdout
    assert "saved note 1" in done.stdout
    assert "#1 the wifi password is on the fridge" in done.stdout
    assert "load_skill" in done.stdout and "read-only: runs" in done.stdout
    notes = json.loads((tmp_path / "notes.json").read_text())
    assert [n["text"] for n in notes] == ["the wifi password is on the fridge"]
    [session] = (tmp_path / "sessions").glob("*.md")
    transcript = parse(session.read_text())
    assert transcript.header.tools == ("add_note", "find_notes", "delete_note")
    assert [t.call.name for turn in transcript.turns for t in turn.tools] == [
        "add_note", "find_notes"]


def test_find_notes_needs_no_approval_but_add_note_does(tmp_path: Path) -> None:
    agent = str(ROOT / "examples" / "notes_agent" / "agent.py")
    done = run_piped(tmp_path, 'use add_note text="x"\nuse find_notes on x\n', agent)
    assert "← add_note: refused" in done.stdout
    assert "no notes match 'x'" in done.stdout  # allowed by the agent's rule


def test_tools_verbose_in_chat_shows_calls_in_full(tmp_path: Path) -> None:
    agent = str(ROOT / "examples" / "notes_agent" / "agent.py")
    long = "w" * 120
    done = run_piped(tmp_path, f'tools verbose\nuse find_notes query="{long}"\ntools quiet\n'
                     f'use find_notes query="{long}"\n', agent)
    assert done.returncode == 0, done.stderr
    verbose, quiet = done.stdout.split("Tool calls are shown compactly.")
    assert "Tool calls are shown in full" in verbose
    assert f'"query": "{long}"' in verbose and "← find_notes (ok, " in verbose
    assert f'"query": "{long}"' not in quiet and "← find_notes: " in quiet


def test_the_walkthroughs_notes_file_is_named_and_ignored_in_the_checkout() -> None:
    """Issue 35: the walkthrough leaves notes.json in the checkout: the README says so (and how
    to start over), and git ignores it there."""
    after = README.split("<!-- /agent-walkthrough -->", 1)[1]
    assert "`notes.json` in the directory it runs in" in after.split("\n\n")[1]
    ignored = (ROOT / ".gitignore").read_text(encoding="utf-8").splitlines()
    assert "/notes.json" in ignored
