"""``rollchat -p`` with the offline model, as a script meets it: the answer alone on stdout,
the prompt from the argument, from stdin, or with stdin as its context (joined as
docs/oneshot.md says), ``-c``/``--resume``, usage errors (exit 2), and piped input without
``-p`` unchanged; a failure that is not the user's (exit 1)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from rollchat.cli.argv import chat_args
from rollchat.cli.oneshot import join_context
from rollchat.storage.transcript import parse
from tests.e2e import clean_env, run_piped


def run(tmp_path: Path, *args: str, stdin: str | None = None,
        env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """rollchat with ``args``; stdin is ``stdin`` piped, or nothing (/dev/null) when None."""
    return run_piped(tmp_path, stdin, *args, env=env or clean_env(tmp_path / "home"))


def sessions(tmp_path: Path) -> list[Path]:
    return sorted((tmp_path / "sessions").glob("*.md"))


def test_the_answer_alone_on_stdout_and_the_session_saved(tmp_path: Path) -> None:
    done = run(tmp_path, "-p", "what is a token bucket?")
    assert done.returncode == 0, done.stderr
    [path] = sessions(tmp_path)
    transcript = parse(path.read_text(encoding="utf-8"))
    [turn] = transcript.turns
    assert turn.user == "what is a token bucket?"
    assert done.stdout == turn.assistant + "\n"  # no banner, no "You:", no goodbye
    assert "Goodbye" not in done.stdout + done.stderr
    assert transcript.summary is not None  # saved with its summary, resumable


def test_the_prompt_read_from_stdin(tmp_path: Path) -> None:
    done = run(tmp_path, "-p", "--output-format", "json", stdin="hello there\n")
    assert done.returncode == 0, done.stderr
    [turn] = parse(sessions(tmp_path)[0].read_text(encoding="utf-8")).turns
    assert turn.user == "hello there"
    assert json.loads(done.stdout)["answer"] == turn.assistant


def test_stdin_is_the_context_of_the_question_in_a_fenced_block(tmp_path: Path) -> None:
    piped = "def f():\n    return '```'\n"
    done = run(tmp_path, "-p", "review this", stdin=piped)
    assert done.returncode == 0, done.stderr
    [turn] = parse(sessions(tmp_path)[0].read_text(encoding="utf-8")).turns
    # the question, a blank line, stdin in a fence longer than its backtick runs
    assert turn.user == "review this\n\n````\ndef f():\n    return '```'\n````"


def test_join_context() -> None:
    assert join_context("q", "") == "q"
    assert join_context("q", "\n\n") == "q"
    assert join_context("q", "a\nb\n") == "q\n\n```\na\nb\n```"


@pytest.mark.parametrize(("typed", "parsed"), [
    (["-p", "q"], ["-p", "q"]),
    (["-p"], ["--print-stdin"]),
    (["-p", "--model", "m", "a", "question"], ["--print", "a question", "--model", "m"]),
    (["--model", "m", "-p"], ["--print-stdin", "--model", "m"]),
    (["-p", "--", "-5 degrees?"], ["--print", "-5 degrees?"]),
    (["-p", "main.py"], ["-p", "main.py"]),  # the prompt, not an agent file
    (["agent.py", "-p", "--yes", "q"], ["--print", "q", "--agent-file", "agent.py", "--yes"]),
])
def test_where_the_prompt_is_read_from_the_command_line(typed: list[str],
                                                         parsed: list[str]) -> None:
    assert chat_args(typed) == parsed


def test_a_bare_p_among_options_takes_the_prompt_after_them(tmp_path: Path) -> None:
    done = run(tmp_path, "-p", "--output-format", "json", "what", "is", "rust")
    assert done.returncode == 0, done.stderr
    [turn] = parse(sessions(tmp_path)[0].read_text(encoding="utf-8")).turns
    assert turn.user == "what is rust"


def test_continue_and_resume_go_on_from_the_saved_session(tmp_path: Path) -> None:
    first = json.loads(run(tmp_path, "-p", "remember the word pelican",
                           "--output-format", "json").stdout)
    second = run(tmp_path, "-c", "-p", "what word?", "--output-format", "json")
    assert second.returncode == 0, second.stderr
    continued = json.loads(second.stdout)
    assert continued["session_id"] != first["session_id"]
    header = parse(Path(continued["session_path"]).read_text(encoding="utf-8")).header
    assert header.resumed_from == first["session_id"]
    third = json.loads(run(tmp_path, "--resume", continued["session_id"], "-p", "and now?",
                           "--output-format", "json").stdout)
    header = parse(Path(third["session_path"]).read_text(encoding="utf-8")).header
    assert header.resumed_from == continued["session_id"]
    assert [t.user for t in parse(Path(third["session_path"]).read_text(
        encoding="utf-8")).turns if t.kind == "query"] == ["and now?"]


@pytest.mark.parametrize(("args", "stdin", "says"), [
    (["-p"], "", "empty prompt from stdin"),
    (["-p", "  "], None, "empty prompt"),
    (["--output-format", "json"], "hi\n", "--output-format goes with -p"),
    (["-p", "q", "--output-format", "xml"], None, "xml"),
    (["-p", "q", "--resume", "nosuchsession"], None, "nosuchsession"),
    (["-p", "q", "-c"], None, "no saved sessions"),
    (["-p", "q", "-c", "--resume", "1"], None, "cannot be used together"),
])
def test_usage_errors_exit_2_with_one_line(tmp_path: Path, args: list[str], stdin: str | None,
                                           says: str) -> None:
    done = run(tmp_path, *args, stdin=stdin)
    assert (done.returncode, done.stdout) == (2, ""), done.stderr
    assert says in done.stderr


@pytest.mark.parametrize("output_format", ["text", "json"])
def test_a_sessions_directory_that_cannot_be_made_exits_1_with_one_line(
        tmp_path: Path, output_format: str) -> None:
    (tmp_path / "afile").write_text("not a directory\n", encoding="utf-8")
    done = run(tmp_path, "-p", "q", "--output-format", output_format,
               "--sessions-dir", str(tmp_path / "afile" / "sessions"))
    assert (done.returncode, done.stdout) == (1, ""), done.stderr
    [line] = done.stderr.splitlines()
    assert "cannot create sessions directory" in line and "afile" in line


def test_a_bad_one_shot_summary_setting_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "rollchat.yml").write_text("summary:\n  one_shot: sometimes\n", encoding="utf-8")
    done = run(tmp_path, "-p", "q")
    assert done.returncode == 2
    assert "one_shot" in done.stderr and "local, model" in done.stderr


def test_piped_input_without_p_still_runs_the_chat(tmp_path: Path) -> None:
    done = run_piped(tmp_path, "hello\n")
    assert done.returncode == 0, done.stderr
    assert "You: hello" in done.stdout and "Goodbye!" in done.stdout


def test_no_save_keeps_the_session_in_memory_and_says_so_in_the_json(tmp_path: Path) -> None:
    done = run(tmp_path, "-p", "hello", "--no-save", "--output-format", "json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["session_id"] and result["session_path"] is None
    assert not (tmp_path / "sessions").exists()


def test_the_agent_option_picks_the_agent_that_answers(tmp_path: Path) -> None:
    (tmp_path / "rollchat.yml").write_text(
        "agents:\n  coder:\n    name: Coder\n    provider: offline\n", encoding="utf-8")
    done = run(tmp_path, "--agent", "coder", "-p", "hello", "--output-format", "json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert (result["agent"], result["provider"]) == ("Coder", "offline")
    assert parse(Path(result["session_path"]).read_text(encoding="utf-8")).header.agent == "Coder"
