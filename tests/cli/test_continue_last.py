"""Issue 24, point 9: ``rollchat -c`` never picks a session it cannot resume: one killed right
after its first Enter (a header and no turn: here a handoff's, whose file is made before the
answer) is passed over for the newest session with a query, and with only such sessions -c says
so and starts nothing."""

from __future__ import annotations

import signal
import time
from pathlib import Path

from rollchat.storage.transcript import parse
from tests.e2e import PROMPT, run_piped, spawn, write_config

FAST = "ui:\n  offline_word_delay: 0\n"
# the answer takes long enough to be killed in
SLOW = """ui:
  offline_word_delay: 2
default_agent: one
agents:
  one:
    provider: offline
  two:
    provider: offline
"""


def _parses(path: Path) -> bool:
    try:
        parse(path.read_text(encoding="utf-8"))
    except Exception:
        return False
    return True


def _killed_after_first_enter(tmp_path: Path) -> Path:
    """A chat killed (SIGKILL) once its file exists, while the first answer streams: the
    first line hands over to another agent, whose session file is made before it answers."""
    before = set(tmp_path.glob("sessions/*.md"))
    child = spawn(tmp_path, "--config", str(write_config(tmp_path / "slow.yml", SLOW)))
    child.expect(PROMPT)
    child.sendline("@two a question never answered")
    for _ in range(300):  # until the file is there with its header whole
        made = set(tmp_path.glob("sessions/*.md")) - before
        if made and _parses(next(iter(made))):
            break
        time.sleep(0.05)
    child.kill(signal.SIGKILL)
    child.close()
    [path] = made
    return path


def test_continue_passes_over_a_session_killed_right_after_its_first_enter(
        tmp_path: Path) -> None:
    cfg = write_config(tmp_path / "rollchat.yml", FAST)
    done = run_piped(tmp_path, "We decided to use postgres.\nexit\n", "--config", str(cfg))
    assert done.returncode == 0, done.stderr
    [first] = tmp_path.glob("sessions/*.md")
    killed = _killed_after_first_enter(tmp_path)
    assert not parse(killed.read_text(encoding="utf-8")).turns  # a header, no turn
    result = run_piped(tmp_path, "and now?\nexit\n", "--config", str(cfg), "-c")
    assert result.returncode == 0, result.stderr
    assert f"Found: {first.stem}" in result.stdout and killed.stem not in result.stdout


def test_continue_with_only_such_sessions_says_so(tmp_path: Path) -> None:
    cfg = write_config(tmp_path / "rollchat.yml", FAST)
    killed = _killed_after_first_enter(tmp_path)
    result = run_piped(tmp_path, "hello\n", "--config", str(cfg), "-c")
    assert result.returncode == 1
    assert "has a query to continue from (1 without one)" in result.stderr
    assert list(tmp_path.glob("sessions/*.md")) == [killed]  # no chat was started
