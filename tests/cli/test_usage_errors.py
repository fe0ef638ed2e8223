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


def test_resume_of_a_session_that_does_not_exist_is_said_before_the_banner(
        tmp_path: Path) -> None:
    done = run_piped(tmp_path, "exit\n", "--resume", "99")
    assert done.returncode == 2 and done.stdout == ""  # no banner, no chat
    assert done.stderr.splitlines() == [
        "rollchat: error: there are no saved sessions to choose from"]
    assert not (tmp_path / "sessions").exists()  # nothing made on the way
    made = run_piped(tmp_path, "hi\nexit\n")
    assert made.returncode == 0, made.stderr
    for start in (["--resume", "99"], ["--fork", "99"]):
        done = run_piped(tmp_path, "exit\n", *start)
        assert done.returncode == 2 and done.stdout == ""
        assert done.stderr.splitlines() == [
            "rollchat: error: no session number 99: choose between 1 and 1"]


def test_a_model_named_for_the_offline_provider_is_said_to_be_unused(tmp_path: Path) -> None:
    done = run_piped(tmp_path, "", "-p", "hi", "--provider", "offline", "--model", "gpt-4o",
                     "--no-save")
    assert done.returncode == 0, done.stderr
    assert ("Model gpt-4o is not asked: the offline model answers under its name (the "
            "provider is offline: choose one that serves it with --provider).") in \
        " ".join(done.stderr.split())
    done = run_piped(tmp_path, "exit\n", "--model", "claude-sonnet-4-5", "--no-save")
    assert done.returncode == 0, done.stderr
    assert ("Model claude-sonnet-4-5 is not asked: the offline model answers under its name "
            "(no API key is set: set ANTHROPIC_API_KEY or OPENAI_API_KEY, or give --base-url "
            "for a local server).") in " ".join((done.stdout + done.stderr).split())
    quiet = run_piped(tmp_path, "exit\n", "--model", "offline-2", "--no-save")  # its own name
    assert "is not asked" not in quiet.stdout + quiet.stderr
