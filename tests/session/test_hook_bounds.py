"""A hook's output and processes are bounded (issue 33 item 5): a hook printing without end
costs rollchat no memory (its head is used, cut with " [cut]", the rest counted), and at the
timeout everything it started ends, even what left its process group with setsid."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from rollchat.config.hooks import HookConfig
from rollchat.storage.transcript import parse
from rollchat.tools.children import TAIL_CHARS, Bounded, run_bounded
from rollchat.tools.hooks import BLOCK, MAX_OUTPUT, HookOutcome, Hooks
from tests.e2e import clean_env, run_piped
from tests.session.test_hooks import _config as hooks_config


def _config(tmp_path: Path, event: str, command: str, timeout: float = 60) -> Path:
    """The hooks tests' config (tests/session/test_hooks.py) with one command hook."""
    return hooks_config(tmp_path, f"""\
  {event}:
    - hooks:
        - {{type: command, command: {json.dumps(command)}, timeout: {timeout}}}
""")




# rollchat run with its own peak memory (VmHWM: the high-water mark of this process's memory
# since its exec) written to argv[1] at exit. Not wait4's ru_maxrss: that also holds the memory
# of the process that started it, as it was when it forked (a pytest worker that has run
# hundreds of tests: 300-500 MB).
MEASURED = """
import atexit, re, sys
out = sys.argv.pop(1)
def peak():
    with open("/proc/self/status", encoding="ascii") as f:
        kb = re.search(r"VmHWM:\\s+(\\d+)", f.read()).group(1)
    with open(out, "w", encoding="ascii") as f:
        f.write(kb)
atexit.register(peak)
sys.argv[0] = "rollchat"
from rollchat.__main__ import main
main()
"""


def test_a_hook_printing_hundreds_of_megabytes_costs_no_memory_and_is_cut(
        tmp_path: Path) -> None:
    config = _config(tmp_path, "UserPromptSubmit", "yes | head -c 400000000")
    peak = tmp_path / "peak"
    done = subprocess.run([sys.executable, "-c", MEASURED, str(peak), "--config", str(config),
                           "--provider", "offline"], cwd=tmp_path, text=True, input="hello\n",
                          capture_output=True, env=clean_env(tmp_path / "home"), timeout=110)
    assert done.returncode == 0, done.stdout + done.stderr
    kept = int(peak.read_text(encoding="ascii"))
    assert kept < 200_000, kept  # KB: 400 MB read, under 200 MB kept
    [session] = (tmp_path / "sessions").glob("*.md")
    [turn] = parse(session.read_text(encoding="utf-8")).turns
    assert "y\ny\ny" in turn.context_block
    assert " [cut]" in turn.context_block  # the cut says so
    assert len(turn.context_block) < MAX_OUTPUT + 1_000


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().rsplit(")", 1)[1].split()[0] == "Z")


def test_what_a_hook_started_in_new_sessions_ends_at_its_timeout(tmp_path: Path) -> None:
    """``setsid`` children (one under the hook's shell, one orphaned by a shell that exited)
    outlived the kill of the hook's process group; both end at the timeout now."""
    command = ("setsid sleep 1000 & echo $! > under.pid; "
               "sh -c 'setsid sleep 1000 & echo $! > orphan.pid'; exec sleep 1000")
    config = _config(tmp_path, "UserPromptSubmit", command, timeout=1)
    started = time.monotonic()
    done = run_piped(tmp_path, "hello\n", "--config", str(config), "--provider", "offline",
                     timeout=120, env=clean_env(tmp_path / "home"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "took longer than 1s and was killed; going on" in done.stdout
    assert time.monotonic() - started < 60
    pids = [int((tmp_path / name).read_text()) for name in ("under.pid", "orphan.pid")]
    try:
        assert [pid for pid in pids if _alive(pid)] == []  # gone when rollchat said so
    finally:
        for pid in pids:
            if _alive(pid):
                os.kill(pid, 9)


def test_a_bounded_stream_keeps_its_head_and_tail_and_counts_the_rest() -> None:
    kept = Bounded(head=5, tail=3)
    for chunk in ("abc", "defgh", "ijklmnop", "qr"):
        kept.add(chunk)
    assert (kept.head, kept.tail, kept.dropped, kept.cut) == ("abcde", "pqr", 10, True)
    assert kept.text() == "abcde\n[... 10 characters not kept ...]\npqr"


def test_run_bounded_reads_what_a_child_says_and_its_status(tmp_path: Path) -> None:
    done = run_bounded("cat; echo oops >&2; exit 3", stdin="given", timeout=30, cwd=tmp_path,
                       env=dict(os.environ), head=100)
    assert (done.returncode, done.out.text(), done.err.text()) == (3, "given", "oops\n")


def test_a_run_killed_while_its_hooks_run_leaves_the_message_not_a_bare_header(
        tmp_path: Path) -> None:
    """Issue 33 item 6: the file is made for the hooks (they are told its path) before the
    first message is answered; a SIGKILL then left a header alone, listed by ``sessions``."""
    config = _config(tmp_path, "UserPromptSubmit", "echo $$ > hook.pid; exec sleep 1000")
    child = subprocess.Popen([sys.executable, "-m", "rollchat", "--config", str(config),
                              "--provider", "offline"], cwd=tmp_path, text=True,
                             stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, env=clean_env(tmp_path / "home"))
    marker = tmp_path / "hook.pid"
    try:
        assert child.stdin is not None
        child.stdin.write("deploy the staging cluster\n")
        child.stdin.flush()
        deadline = time.monotonic() + 60
        while not (marker.exists() and marker.read_text().strip()):  # the hook is running
            assert time.monotonic() < deadline and child.poll() is None
            time.sleep(0.02)
        child.kill()
        child.wait()
    finally:
        if marker.exists() and marker.read_text().strip():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(marker.read_text()), 9)
        child.kill()
    [session] = (tmp_path / "sessions").glob("*.md")
    [turn] = parse(session.read_text(encoding="utf-8")).turns
    assert (turn.user, turn.status) == ("deploy the staging cluster", "interrupted")
    listed = run_piped(tmp_path, None, "sessions", env=clean_env(tmp_path / "home"))
    assert "deploy the staging cluster" in listed.stdout, listed.stdout + listed.stderr


def _hook_said(tmp_path: Path, size: int, status: int) -> HookOutcome:
    """What rollchat takes from a UserPromptSubmit hook that prints ``size`` characters ("y")
    on stdout (status 0: added context) or on stderr (status 2: the reason it blocks)."""
    stream = "" if status == 0 else " >&2"
    command = f"head -c {size} /dev/zero | tr '\\0' y{stream}; exit {status}"
    hooks = Hooks([HookConfig("UserPromptSubmit", command, timeout=60)], cwd=tmp_path,
                  env=dict(os.environ))
    return hooks.run("UserPromptSubmit", {"prompt": "hello"})


def test_a_hook_output_past_the_limit_is_cut_saying_so_and_one_within_it_is_whole(
        tmp_path: Path) -> None:
    """Issue 36 item 6: a hook's output cut without its " [cut]" marker went unseen (the one
    test printed 400 MB, in a subprocess). Every size around the limit, on both streams: one
    character over it (the head full, one character in the tail), past the tail (characters
    dropped, counted), and exactly at it (nothing cut, nothing said)."""
    head = "y" * MAX_OUTPUT
    for size in (MAX_OUTPUT + 1, MAX_OUTPUT + TAIL_CHARS + 1, 3 * MAX_OUTPUT):
        said = _hook_said(tmp_path, size, 0)
        assert (said.blocked, said.context) == (None, head + " [cut]"), size
        blocked = _hook_said(tmp_path, size, BLOCK)
        assert blocked.blocked == head + " [cut]", size
    assert _hook_said(tmp_path, MAX_OUTPUT, 0).context == head
    assert _hook_said(tmp_path, MAX_OUTPUT, BLOCK).blocked == head


def test_a_bounded_stream_one_character_past_its_head_is_cut() -> None:
    kept = Bounded(head=5, tail=3)
    kept.add("abcdef")
    assert (kept.cut, kept.text()) == (True, "abcdef")
    whole = Bounded(head=5, tail=3)
    whole.add("abcde")
    assert (whole.cut, whole.text()) == (False, "abcde")
