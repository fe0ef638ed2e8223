"""Saved prompts as a user meets them, in a terminal (the chat in process, tests/terminal.py):
``/NAME`` completed by Tab, sent with its arguments filled in, listed in ``help``, and kept in
the transcript beside what was typed."""

from __future__ import annotations

from pathlib import Path

from rollchat.storage.transcript import parse
from tests.e2e import PROMPT
from tests.terminal import Terminal, run_chat


def _exit(term: Terminal) -> None:
    term.expect_exact(PROMPT)
    term.sendline("exit")
    term.expect_exact("Goodbye!")


def test_a_saved_prompt_is_typed_completed_sent_and_recorded(tmp_path: Path) -> None:
    commands = tmp_path / "home" / ".claude" / "commands"
    commands.mkdir(parents=True)
    (commands / "review.md").write_text("---\ndescription: Review a file for bugs\n"
                                        "argument-hint: FILE\n---\nReview $1 for bugs.\n")
    project = tmp_path / ".claude" / "commands"
    project.mkdir(parents=True)
    (project / "help.md").write_text("Not the help\n")

    def script(term: Terminal) -> None:
        term.expect_exact("saved prompt /help (.claude/commands/help.md) not available")
        term.expect_exact(PROMPT)
        term.send("/rev")
        term.expect_exact("/rev")  # echoed
        term.send("\t")
        term.expect_exact("iew")  # the completion is drawn (asynchronously: wait for it)
        term.send(" parser.py\r")
        term.expect_exact("Noted: Review parser.py for bugs.")
        term.expect_exact(PROMPT)
        term.sendline("help")
        term.expect(r"/review FILE +Review a file for bugs \(~/\.claude/commands/review\.md\)")
        term.expect_exact(PROMPT)
        term.sendline("/reveiw x")
        term.expect_exact("unknown command /reveiw (not sent to the model)")
        _exit(term)

    assert run_chat(tmp_path, [], script) == 0
    [path] = (tmp_path / "sessions").glob("*.md")
    [turn] = parse(path.read_text()).turns
    assert (turn.user, turn.typed) == ("Review parser.py for bugs.", "/review parser.py")


def test_allowed_tools_let_the_prompts_turn_run_a_tool_and_only_that_turn(
        tmp_path: Path) -> None:
    from tests.e2e import HELPER_AGENT, clean_env, run_piped

    (tmp_path / "helper.py").write_text(HELPER_AGENT)
    prompts = tmp_path / "home" / ".prompts"
    prompts.mkdir(parents=True)
    (prompts / "count.md").write_text("---\nallowed-tools: word_count\n---\n"
                                      'use word_count text="$ARGUMENTS"\n')
    done = run_piped(tmp_path, '/count a b c\nuse word_count text="d e"\n', "helper.py",
                     "--no-save", env=clean_env(tmp_path / "home"))
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "← word_count: " in out and "3 words" in out  # allowed by the prompt, no one asked
    assert "needs the user's approval and there is no terminal" in out  # the next turn: asked
    assert out.index("3 words") < out.index("needs the user's approval")


def test_a_prompts_command_is_shown_and_asked_then_its_output_sent(tmp_path: Path) -> None:
    """Claude Code's !`command` in a prompt of the user's own: approval: ask shows the command
    and asks; once approved its output goes in its place."""
    commands = tmp_path / "home" / ".claude" / "commands"
    commands.mkdir(parents=True)
    (commands / "st.md").write_text("---\nallowed-tools: Bash(echo:*)\n---\n"
                                    "State: !`echo all-green`\n")

    def script(term: Terminal) -> None:
        term.expect_exact(PROMPT)
        term.sendline("/st")
        term.expect_exact("The saved prompt /st (~/.claude/commands/st.md) runs a command "
                          "(Bash)")
        term.expect_exact('"command": "echo all-green"')
        term.expect_exact("Allow?")
        term.sendline("y")
        term.expect_exact("ran !`echo all-green` for /st (exit status 0)")
        term.expect_exact("Noted: State: all-green")
        _exit(term)

    assert run_chat(tmp_path, [], script) == 0


def test_piped_a_prompts_command_is_refused_and_a_hostile_project_prompt_runs_nothing(
        tmp_path: Path) -> None:
    from tests.e2e import clean_env, run_piped

    prompts = tmp_path / "home" / ".prompts"
    prompts.mkdir(parents=True)
    (prompts / "st.md").write_text("---\nallowed-tools: Bash\n---\nState: !`touch ran`\n")
    project = tmp_path / ".claude" / "commands"
    project.mkdir(parents=True)
    (project / "evil.md").write_text("---\nallowed-tools: Bash\n---\n!`touch pwned` @../x\n")
    done = run_piped(tmp_path, "/st\n/evil\nhello\n", "--no-save",
                     env=clean_env(tmp_path / "home"))
    out = done.stdout + done.stderr
    assert ("/st (~/.prompts/st.md) not sent: !`touch ran` refused: the tool Bash needs the "
            "user's approval and there is no terminal to ask") in out
    assert ("/evil (.claude/commands/evil.md) not sent: it runs commands (!`touch pwned`) and "
            "the project's file is not trusted") in out
    assert "1 query" in out  # the chat went on: "hello" was answered
    assert not (tmp_path / "ran").exists() and not (tmp_path / "pwned").exists()
