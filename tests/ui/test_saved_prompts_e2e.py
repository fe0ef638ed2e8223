"""Saved prompts as a user meets them, in a pseudo-terminal: ``/NAME`` completed by Tab, sent
with its arguments filled in, listed in ``help``, and kept in the transcript beside what was
typed."""

from __future__ import annotations

from pathlib import Path

from rollchat.storage.transcript import parse
from tests.e2e import PROMPT, exit_chat, spawn


def test_a_saved_prompt_is_typed_completed_sent_and_recorded(tmp_path: Path) -> None:
    commands = tmp_path / "home" / ".claude" / "commands"
    commands.mkdir(parents=True)
    (commands / "review.md").write_text("---\ndescription: Review a file for bugs\n"
                                        "argument-hint: FILE\n---\nReview $1 for bugs.\n")
    project = tmp_path / ".claude" / "commands"
    project.mkdir(parents=True)
    (project / "help.md").write_text("Not the help\n")
    child = spawn(tmp_path)
    try:
        child.expect_exact("saved prompt /help (.claude/commands/help.md) not available")
        child.expect_exact(PROMPT)
        child.send("/rev")
        child.expect_exact("/rev")  # echoed
        child.send("\t")
        child.expect_exact("iew")  # the completion is drawn (asynchronously: wait for it)
        child.send(" parser.py\r")
        child.expect_exact("Noted: Review parser.py for bugs.")
        child.expect_exact(PROMPT)
        child.sendline("help")
        child.expect(r"/review FILE +Review a file for bugs \(~/\.claude/commands/review\.md\)")
        child.expect_exact(PROMPT)
        child.sendline("/reveiw x")
        child.expect_exact("unknown command /reveiw (not sent to the model)")
        exit_chat(child)
    finally:
        child.close(force=True)
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
