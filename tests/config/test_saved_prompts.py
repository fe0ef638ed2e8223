"""Saved prompts found, read and filled in (config/saved_prompts.py): the order of the
directories, built-in names, Claude Code's front matter, $ARGUMENTS and $1..$9, trust."""

from __future__ import annotations

from pathlib import Path

from rollchat.config.load import trust_file
from rollchat.config.saved_prompts import load_saved_prompts, places
from rollchat.config.trust import trust_check
from rollchat.providers.base import ToolSpec
from rollchat.tools import Tool
from rollchat.tools.approval import Gate

BUILTINS = frozenset({"help", "exit", "compact"})


def _write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return path


def _load(tmp_path: Path):  # type: ignore[no-untyped-def]
    home, config = tmp_path / "home", tmp_path / "home" / "config" / "rollchat"
    return load_saved_prompts(places(tmp_path, home, config), BUILTINS,
                              lambda path: trust_check(path, config))


def test_the_first_directory_in_the_order_wins(tmp_path: Path) -> None:
    home = tmp_path / "home"
    _write(home / ".prompts" / "fix.md", "from ~/.prompts")
    _write(home / ".codex" / "prompts" / "fix.md", "from codex")
    _write(home / ".codex" / "prompts" / "plan.md", "Plan it")
    _write(home / ".claude" / "commands" / "fix.md", "from ~/.claude")
    _write(tmp_path / ".claude" / "commands" / "fix.md", "from the project's .claude")
    found = _load(tmp_path)
    assert found.commands["fix"].body == "from the project's .claude"
    _write(tmp_path / ".rollchat" / "commands" / "fix.md", "from .rollchat")
    found = _load(tmp_path)
    assert found.commands["fix"].body == "from .rollchat"
    assert found.commands["plan"].display == "~/.codex/prompts/plan.md"
    assert found.find("PLAN") is found.commands["plan"]  # typed in another case
    assert found.find("nope") is None


def test_a_built_in_name_is_reported_once_and_the_built_in_wins(tmp_path: Path) -> None:
    _write(tmp_path / ".claude" / "commands" / "help.md", "project help")
    _write(tmp_path / "home" / ".prompts" / "help.md", "my help")
    _write(tmp_path / "home" / ".prompts" / "Compact.md", "my compact")
    found = _load(tmp_path)
    assert "help" not in found.commands and "Compact" not in found.commands
    assert found.notes == (
        "saved prompts /help (.claude/commands/help.md), /Compact (~/.prompts/Compact.md) not "
        "available: built-in commands take those names; rename the file to use it",)


def test_arguments_and_positionals_are_filled_in(tmp_path: Path) -> None:
    _write(tmp_path / "home" / ".prompts" / "review.md",
           "Review $1 for $2 ($3 is empty).\nAll of it: $ARGUMENTS\n")
    _write(tmp_path / "home" / ".prompts" / "plain.md", "Summarize the diff.\n")
    prompts = _load(tmp_path).commands
    assert prompts["review"].expand('a.py "error handling"') == (
        'Review a.py for error handling ( is empty).\nAll of it: a.py "error handling"')
    assert prompts["review"].expand("it's") == "Review it's for  ( is empty).\nAll of it: it's"
    # a prompt that takes no arguments keeps those given: never dropped
    assert prompts["plain"].expand("focus on tests") == "Summarize the diff.\n\nfocus on tests"
    assert prompts["plain"].expand("") == "Summarize the diff."


def test_claude_code_front_matter(tmp_path: Path) -> None:
    _write(tmp_path / "home" / ".claude" / "commands" / "commit.md",
           "---\ndescription: Make a commit\nargument-hint: [message]\nmodel: claude-opus-4\n"
           "allowed-tools: Bash(git add:*), Bash(git commit:*), run_tests, github.*\n"
           "color: blue\n---\nCommit with $ARGUMENTS\n")
    _write(tmp_path / "home" / ".prompts" / "bare.md", "\n# Explain this code\n\nmore\n")
    _write(tmp_path / "home" / ".prompts" / "hints.md",
           "---\nargument-hint: [pr-number] [priority]\nallowed-tools:\n  - run_tests\n"
           "  - 'lint'\n---\nx")
    _write(tmp_path / "home" / ".prompts" / "broken.md", "---\ndescription ok\n---\nx")
    found = _load(tmp_path)
    commit = found.commands["commit"]
    assert (commit.description, commit.argument_hint, commit.model) == (
        "Make a commit", "[message]", "claude-opus-4")
    assert commit.body == "Commit with $ARGUMENTS\n"
    assert commit.allowed == ("run_tests", "github.*")
    assert commit.notes == (
        "~/.claude/commands/commit.md: allowed-tools Bash(git add:*), Bash(git commit:*) not "
        "applied (Claude Code's tools; rollchat's tools have other names)",
        "~/.claude/commands/commit.md: front matter color not used by rollchat")
    assert found.commands["bare"].description == "Explain this code"  # its first line
    hints = found.commands["hints"]
    assert (hints.argument_hint, hints.allowed) == ("[pr-number] [priority]", ("run_tests", "lint"))
    assert found.commands["broken"].body == "x"
    assert found.notes == ("~/.prompts/broken.md: line 2 of the front matter is not 'key: "
                           "value'; its front matter is ignored",)


def test_a_project_file_lets_tools_run_only_once_trusted(tmp_path: Path) -> None:
    text = "---\nallowed-tools: run_tests\n---\nRun the tests"
    path = _write(tmp_path / ".claude" / "commands" / "t.md", text)
    untrusted = _load(tmp_path).commands["t"]
    assert untrusted.allowed == ()
    assert untrusted.notes == (".claude/commands/t.md: allowed-tools run_tests not applied: the "
                               "project's file is not trusted (`rollchat trust "
                               ".claude/commands/t.md`)",)
    said = trust_file(Path(".claude/commands/t.md"), cwd=tmp_path,
                      user_config_dir=tmp_path / "home" / "config" / "rollchat")
    assert said.startswith("Trusted .claude/commands/t.md: its allowed-tools now apply")
    assert _load(tmp_path).commands["t"].allowed == ("run_tests",)
    _write(path, text + " again")  # changed since: not trusted any more
    assert _load(tmp_path).commands["t"].allowed == ()


def test_unreadable_and_odd_files_are_said_not_fatal(tmp_path: Path) -> None:
    prompts = tmp_path / "home" / ".prompts"
    _write(prompts / "latin.md", b"caf\xe9")
    _write(prompts / "huge.md", "x" * (64 * 1024 + 1))
    _write(prompts / "-dash.md", "a name no command can have")
    _write(prompts / "notes.txt", "not markdown")
    found = _load(tmp_path)
    assert list(found.commands) == []
    assert found.notes == ("~/.prompts/huge.md: larger than 64 KiB, not a saved prompt",
                           "~/.prompts/latin.md: not UTF-8 text, not a saved prompt")


def test_allowed_tools_last_one_turn_and_a_deny_rule_still_refuses() -> None:
    gate = Gate(mode="never", deny=("rm_*",))
    tool = Tool(ToolSpec("run_tests", ""), run=lambda args: "")
    rm = Tool(ToolSpec("rm_all", ""), run=lambda args: "")
    assert gate.rule(tool) == "refused (approval: never)"
    with gate.allowing(("run_tests", "rm_*")):
        assert gate.rule(tool) == "allowed by a rule"
        assert gate.rule(rm) == "denied by a rule"
    assert gate.rule(tool) == "refused (approval: never)"
