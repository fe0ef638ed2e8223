"""Issue 35, item 7: a usage error is one line that says what to do (typer printed a block of
usage, hint and error: four lines), with exit status 2, for the chat's options and every
subcommand's."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from rollchat.cli.app import build_cli
from tests.e2e import run_piped


@pytest.mark.parametrize(("args", "line"), [
    (["--modle", "x"], "rollchat: error: no such option --modle (did you mean --model?); "
                       "rollchat --help lists them"),
    (["sessions", "--jsn"], "rollchat: error: no such option --jsn (did you mean --json?); "
                            "rollchat sessions --help lists them"),
    (["--provider", "nope"], "rollchat: error: invalid value for '--provider': 'nope' is not "
                             "one of 'auto', 'anthropic', 'openai', 'openai-responses', "
                             "'offline' (see rollchat --help)"),
    (["--model"], "rollchat: error: option '--model' requires an argument (see rollchat "
                  "--help)"),
    (["memory", "forget"], "rollchat: error: missing argument 'ID' (see rollchat memory forget "
                           "--help)"),
    (["--xyzzy"], "rollchat: error: no such option --xyzzy; rollchat --help lists them"),
])
def test_a_usage_error_is_one_line_with_exit_status_2(args: list[str], line: str) -> None:
    done = CliRunner().invoke(build_cli(), args, prog_name="rollchat")
    assert done.exit_code == 2
    assert done.stdout == ""
    assert done.stderr.splitlines() == [line]


def test_the_installed_command_says_it_in_one_line(tmp_path: Path) -> None:
    done = run_piped(tmp_path, "", "-p", "hi", "--modle", "x")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.splitlines() == [
        "rollchat: error: no such option --modle (did you mean --model?); rollchat --help "
        "lists them"]
