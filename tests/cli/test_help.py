"""Every command's plain --help: "[required]" reads as it is (typer used to escape it for rich,
showing "\\[required]"), and asking for help imports no rich."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e import clean_env, run_piped

COMMANDS = [[], ["show"], ["import"], ["memory"], ["memory", "forget"], ["compact"]]


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c) or "rollchat")
def test_help_is_plain_text(tmp_path: Path, command: list[str]) -> None:
    done = run_piped(tmp_path, "", *command, "--help")
    assert done.returncode == 0, done.stderr
    assert "\\[" not in done.stdout and "Usage: " in done.stdout
    if command in (["show"], ["import"], ["memory", "forget"]):  # each has a required argument
        assert "  [required]" in done.stdout


PROBE = """
import sys
from rollchat.cli.app import build_cli
try:
    build_cli()(["show", "--help"], prog_name="rollchat")
except SystemExit:
    pass
print("RICH", sorted(m for m in sys.modules if m.startswith("rich")))
"""


def test_help_does_not_import_rich(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-c", PROBE], cwd=str(tmp_path), capture_output=True,
                          text=True, timeout=60, env=clean_env(tmp_path / "home"))
    assert "[required]" in done.stdout and "\\[required]" not in done.stdout
    assert done.stdout.rstrip().endswith("RICH []"), done.stdout


SESSION_COMMANDS = [["show"], ["export"], ["fork"], ["compact"], ["audit"], ["rename"]]


@pytest.mark.parametrize("command", SESSION_COMMANDS, ids=lambda c: " ".join(c))
def test_a_session_argument_is_named_session_and_described(tmp_path: Path,
                                                           command: list[str]) -> None:
    done = run_piped(tmp_path, "", *command, "--help")
    assert done.returncode == 0, done.stderr
    usage = done.stdout.splitlines()[0]
    assert f"rollchat {command[0]} [OPTIONS] SESSION" in usage and "N|ID" not in done.stdout
    # the argument's description is shown, once (click 8.5 dropped typer's, then listed it twice)
    described = re.findall(r"^  SESSION +Session number \(see 'sessions'\), id or id prefix\.",
                           done.stdout, re.M)
    assert len(described) == 1
    assert "Positional arguments" not in done.stdout


def test_the_chats_resume_option_names_its_value_session(tmp_path: Path) -> None:
    done = run_piped(tmp_path, "", "--help")
    assert "--resume [SESSION]" in done.stdout and "N|ID" not in done.stdout


def test_search_limit_is_not_called_the_most_recent(tmp_path: Path) -> None:
    done = run_piped(tmp_path, "", "search", "--help")
    limit = done.stdout[done.stdout.index("--limit"):].split("\n  -")[0]
    assert "most recent" not in limit and "best matches first" in " ".join(limit.split())


def test_resume_typed_as_a_command_says_what_to_type_once(tmp_path: Path) -> None:
    done = run_piped(tmp_path, "", "resume")
    assert done.returncode == 2
    assert "rollchat --resume SESSION" in done.stderr and "rollchat pick" in done.stderr
    assert "Did you mean" not in done.stderr  # 'rename' is not what was meant
    typo = run_piped(tmp_path, "", "renmae")
    assert typo.stderr.count("Did you mean") == 1 and "'rename'" in typo.stderr
