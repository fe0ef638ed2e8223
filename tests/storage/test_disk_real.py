"""Disk full for real, in a real ``rollchat`` chat: the kernel's own errors, not a proxy of
``os``. A tmpfs filled to the last byte gives ENOSPC (mounting one needs root: skipped with the
reason where it cannot be mounted); a file-size limit (RLIMIT_FSIZE, set on the running child
with prlimit) gives EFBIG on the same writes, wherever the tests run. Both: the chat says once
that saving stopped and goes on in memory; once the disk takes writes again the next turn
saves every turn held meanwhile and says so; the exit writes the summary."""

from __future__ import annotations

import contextlib
import errno
import os
import re
import resource
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pexpect
import pytest

from rollchat.storage.transcript import parse
from tests.e2e import PROMPT, clean_env, default_signals, write_config

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="tmpfs and prlimit: Linux")

_ESCAPE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
LINES = ["my database is postgres", "my queue is rabbitmq", "my cache is redis",
         "which cache did I mention?"]


def _chat(cwd: Path, sessions: Path) -> pexpect.spawn:
    cfg = write_config(cwd / "rollchat.yml", "ui:\n  offline_word_delay: 0\n")
    return pexpect.spawn(sys.executable, ["-m", "rollchat", "--config", str(cfg),
                                          "--provider", "offline", "--sessions-dir",
                                          str(sessions)],
                         # no bytecode written: a write cut short by RLIMIT_FSIZE would leave
                         # a truncated .pyc in the shared cache for every later test
                         cwd=str(cwd), env=clean_env(cwd / "home", PYTHONDONTWRITEBYTECODE="1"),
                         encoding="utf-8",
                         timeout=60, dimensions=(40, 200), preexec_fn=default_signals)


def _say(child: pexpect.spawn, line: str) -> str:
    """Send ``line``; what the screen showed until the next prompt, as plain words."""
    child.sendline(line)
    child.expect("Time:")
    shown = str(child.before)
    child.expect(PROMPT)
    return " ".join(_ESCAPE.sub("", shown + str(child.before)).split())


def _run(cwd: Path, sessions: Path, full: Callable[[pexpect.spawn], None],
         space_back: Callable[[pexpect.spawn], None], error: str) -> None:
    child = _chat(cwd, sessions)
    child.expect(PROMPT)
    said = [LINES[0]]
    _say(child, said[-1])
    [path] = sessions.glob("*.md")
    full(child)
    # a tmpfs fills by pages: appends go on into the last page of the file until it is full
    for n in range(100):
        said.append(f"note {n}: {LINES[1]}")
        shown = _say(child, said[-1])
        if error in shown:
            break
    assert error in shown and "the chat goes on in memory" in shown
    saved = len(said) - 1
    said.append(LINES[2])
    shown = _say(child, said[-1])  # still full: not said again
    assert error not in shown and "Saving again" not in shown
    assert [t.user for t in parse(path.read_text()).turns] == said[:saved]
    space_back(child)
    said.append(LINES[3])
    shown = _say(child, said[-1])
    assert "Saving again: " in shown
    assert f"holds every turn now ({len(said) - saved} entries held in memory written)" in shown
    assert "redis" in shown.split(LINES[3])[-1]
    child.sendline("exit")
    child.expect(pexpect.EOF)
    child.close()
    assert "Saved session" in str(child.before)
    saved_now = parse(path.read_text())
    assert [t.user for t in saved_now.turns] == said and saved_now.summary is not None


def test_file_size_limit_then_lifted(tmp_path: Path) -> None:
    """EFBIG ("File too large") from RLIMIT_FSIZE on the chat's process: every write past the
    limit fails as on a full disk, the rest of the machine unaffected."""
    sessions = tmp_path / "sessions"

    def full(child: pexpect.spawn) -> None:
        [path] = sessions.glob("*.md")
        resource.prlimit(child.pid, resource.RLIMIT_FSIZE,
                         (path.stat().st_size + 40, resource.RLIM_INFINITY))

    def lifted(child: pexpect.spawn) -> None:
        resource.prlimit(child.pid, resource.RLIMIT_FSIZE,
                         (resource.RLIM_INFINITY, resource.RLIM_INFINITY))

    _run(tmp_path, sessions, full, lifted, os.strerror(errno.EFBIG))


@contextlib.contextmanager
def _tmpfs(where: Path, size: str) -> Iterator[Path]:
    where.mkdir()
    try:
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700",
                               "tmpfs", str(where)], capture_output=True, text=True,
                              check=False, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        pytest.skip(f"cannot mount a tmpfs here: {exc}")
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (root and CAP_SYS_ADMIN needed): "
                    f"{done.stderr.strip() or done.returncode}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def _fill(disk: Path) -> None:
    """Take every free byte of ``disk``."""
    fd = os.open(disk / "filler", os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        for size in (1 << 16, 1 << 12, 1):  # the last few bytes too
            with contextlib.suppress(OSError):
                while True:
                    os.write(fd, b"\0" * size)
    finally:
        os.close(fd)


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs root")
def test_tmpfs_full_then_space_back(tmp_path: Path) -> None:
    """ENOSPC ("No space left on device") from a tmpfs filled to the last byte; space comes
    back when the filler is removed."""
    with _tmpfs(tmp_path / "disk", "2m") as disk:
        sessions = disk / "sessions"
        _run(tmp_path, sessions, lambda child: _fill(disk),
             lambda child: (disk / "filler").unlink(), os.strerror(errno.ENOSPC))
