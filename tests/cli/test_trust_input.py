"""Issue 33 item 6: ``--yes`` approves tool calls only; "this piped text is mine" (memory takes
facts and ``remember`` lines from piped input) is its own flag, ``--trust-input``. A user who
only wanted tools approved no longer gets a pasted document's line stored as their preference."""

from __future__ import annotations

from pathlib import Path

from rollchat.memory.store import MemoryStore
from tests.e2e import HELPER_AGENT, clean_env, run_piped, user_memory
from tests.memory import project_memory

HELPER = HELPER_AGENT
LINES = 'remember I prefer tabs over spaces\nuse word_count text="one two three"\nexit\n'


def _run(tmp_path: Path, *flags: str) -> tuple[str, list[str]]:
    """The chat's output with ``flags``, piped, and the facts it stored."""
    project = tmp_path / "p"
    project.mkdir(exist_ok=True)
    (project / "helper.py").write_text(HELPER, encoding="utf-8")
    home = tmp_path / "home"
    done = run_piped(project, LINES, "helper.py", "--provider", "offline", *flags,
                     env=clean_env(home))
    assert done.returncode == 0, done.stderr
    store = MemoryStore(project / "sessions", "helper", user_dir=user_memory(home),
                        **project_memory(home, project))
    return done.stdout, [f.text for f in store.facts()]


def test_yes_approves_tools_but_piped_text_is_not_taken_as_yours(tmp_path: Path) -> None:
    out, facts = _run(tmp_path, "--yes")
    assert "3 words" in out  # the tool ran unasked
    assert facts == []
    assert ("Not remembered: a 'remember' line in piped input may come from a document, not "
            "from you. Type it at the prompt, or pass --trust-input to take facts from piped "
            "input.") in out


def test_trust_input_takes_piped_text_as_yours_and_approves_nothing(tmp_path: Path) -> None:
    out, facts = _run(tmp_path, "--trust-input")
    assert "Remembered: I prefer tabs over spaces" in out
    assert facts == ["I prefer tabs over spaces"]
    assert "3 words" not in out  # the tool call needed approval and nobody could give it
    out, _ = _run(tmp_path, "--trust-input", "--yes")
    assert "3 words" in out


def test_the_help_says_what_each_flag_means(tmp_path: Path) -> None:
    done = run_piped(tmp_path, "", "--help", env=clean_env(tmp_path / "home"))
    text = " ".join(done.stdout.split())
    assert "--trust-input" in text and "Piped input is yours" in text
    assert "Approve every tool call without asking" in text
