"""The tests' fork server (tests/forkserver.py, tests/zygote.py): a child it forks is the process
``python -m MODULE`` would start (streams, cwd, environment, argv, signals, open files, exit
status), a timeout kills it, and a server that fails leaves the tests to real processes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pexpect
import pytest

from tests import forkserver
from tests.e2e import _STARTING_ENV, _clean_env, clean_env, default_signals, run_piped

# What a process sees of itself; printed as JSON, then it ends as its first argument says.
PROBE = r'''
import json, os, signal, site, stat, sys, threading, time
if sys.argv[1] == "block":  # SIGTERM held pending (see /proc/PID/status), then a long sleep
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
facts = {
    "argv": sys.argv, "orig_argv": sys.orig_argv, "cwd": os.getcwd(), "path": sys.path,
    "env": dict(os.environ), "stdin": sys.stdin.read(), "name": __name__,
    "streams": [(s.encoding, s.errors, s.line_buffering, s.isatty()) for s in
                (sys.stdin, sys.stdout, sys.stderr)],
    "signals": [str(signal.getsignal(n)) for n in (signal.SIGINT, signal.SIGTERM,
                signal.SIGHUP, signal.SIGPIPE, signal.SIGCHLD, signal.SIGXFSZ)],
    "fds": sorted(os.listdir("/proc/self/fd")), "threads": threading.active_count(),
    "flags": str(sys.flags), "tzname": time.tzname, "user_site": site.USER_SITE,
    "session": os.getsid(0) == os.getpid(),
    "kinds": [stat.S_IFMT(os.fstat(fd).st_mode) for fd in (0, 1, 2)],
    "umask": [l for l in open("/proc/self/status") if l.startswith("Umask")],
}
print(json.dumps(facts))
sys.stdout.flush()
end = sys.argv[1]
if end == "raise":
    raise ValueError("boom")
if end == "interrupt":
    raise KeyboardInterrupt
if end == "message":
    sys.exit("a message")
if end == "block":
    time.sleep(600)
if end == "sleep":
    open("pid.tmp", "w").write(str(os.getpid()))
    os.replace("pid.tmp", "pid")
    time.sleep(600)
sys.exit(int(end))
'''


def _server_env(home: Path) -> dict[str, str]:
    return _clean_env(_STARTING_ENV, home)


@pytest.fixture
def probe(tmp_path: Path) -> Path:
    (tmp_path / "probe.py").write_text(PROBE, encoding="utf-8")
    return tmp_path


def _both(cwd: Path, end: str, env: dict[str, str], text: str | None = "typed\n"
          ) -> tuple[subprocess.CompletedProcess[str], subprocess.CompletedProcess[str]]:
    forked = forkserver.run((end,), cwd, text, env, 60, _server_env, module="probe")
    assert forked is not None, forkserver.STATS
    real = subprocess.run([sys.executable, "-m", "probe", end], cwd=str(cwd), input=text,
                          stdin=subprocess.DEVNULL if text is None else None,
                          capture_output=True, text=True, timeout=60, env=env)
    return forked, real


def _without_runpy(text: str) -> list[str]:
    """A traceback without the frames of runpy (python -m shows two of its own)."""
    return [line for line in text.splitlines() if '"<frozen runpy>"' not in line]


def _facts(done: subprocess.CompletedProcess[str]) -> dict[str, object]:
    return json.loads(done.stdout.splitlines()[0])  # type: ignore[no-any-return]


def test_a_forked_child_is_the_process_python_m_starts(probe: Path) -> None:
    env = clean_env(probe / "home", TZ="Asia/Kolkata", EXTRA="yes")
    forked, real = _both(probe, "3", env)
    assert (forked.returncode, real.returncode) == (3, 3)
    assert forked.args == real.args == [sys.executable, "-m", "probe", "3"]
    assert _facts(forked) == _facts(real)
    assert _facts(forked)["stdin"] == "typed\n" and _facts(forked)["fds"] == ["0", "1", "2", "3"]
    assert forked.stderr == real.stderr == ""


def test_a_forked_child_has_its_callers_umask(probe: Path) -> None:
    _both(probe, "0", clean_env(probe / "home"))  # the server runs (with the usual umask)
    previous = os.umask(0)  # (test_secrets: files written under umask 0 are still private)
    try:
        forked, real = _both(probe, "0", clean_env(probe / "home"))
    finally:
        os.umask(previous)
    assert _facts(forked)["umask"] == _facts(real)["umask"] == ["Umask:\t0000\n"]


def test_no_input_is_dev_null_as_subprocess_devnull(probe: Path) -> None:
    forked, real = _both(probe, "0", clean_env(probe / "home"), text=None)
    assert _facts(forked) == _facts(real)
    assert _facts(forked)["stdin"] == ""


@pytest.mark.parametrize("end", ["0", "raise", "interrupt", "message", "300"])
def test_a_forked_child_ends_as_the_real_one(probe: Path, end: str) -> None:
    forked, real = _both(probe, end, clean_env(probe / "home"), text="")
    assert forked.returncode == real.returncode
    assert _without_runpy(forked.stderr) == _without_runpy(real.stderr)
    assert forked.stdout == real.stdout


def _popen(cwd: Path, end: str, env: dict[str, str], *, stdin: bool,
           merge_stderr: bool = False) -> tuple[forkserver.Forked, subprocess.Popen[str]]:
    """The probe started by the server (left running) and as a real Popen child."""
    forked = forkserver.start((end,), cwd, env, _server_env, stdin=stdin,
                              merge_stderr=merge_stderr, module="probe")
    assert forked is not None, forkserver.STATS
    real = subprocess.Popen([sys.executable, "-m", "probe", end], cwd=str(cwd), env=env,
                            stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
                            stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT if merge_stderr else subprocess.PIPE,
                            text=True, preexec_fn=default_signals)
    return forked, real


def test_a_started_child_is_signalled_as_a_real_one(probe: Path) -> None:
    """A Ctrl-C sent through the server ends the child as it ends the real process (the
    KeyboardInterrupt, killed by SIGINT); what it printed is read line by line, then to the
    end."""
    forked, real = _popen(probe, "sleep", clean_env(probe / "home"), stdin=False)
    ended = []
    for child in (forked, real):
        assert child.stdout is not None
        facts = json.loads(child.stdout.readline())
        assert facts["stdin"] == "" and facts["signals"][0] == "<built-in function " \
            "default_int_handler>"
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=60)
        ended.append((child.returncode, out, err.splitlines()[-1]))
    assert ended[0] == ended[1] == (-signal.SIGINT, "", "KeyboardInterrupt")


def test_a_signal_is_the_started_child_s_once_send_signal_returns(probe: Path) -> None:
    """As Popen.send_signal: the signal is pending in the child when the call returns (sent
    through the server it came later: a SIGTERM then a stdin closed reached the chat in the
    other order, and it ended on the end of its input instead)."""
    forked = forkserver.start(("block",), probe, clean_env(probe / "home"), _server_env,
                              stdin=False, module="probe")
    assert forked is not None and forked.stdout is not None
    forked.stdout.readline()  # (printed once SIGTERM is blocked)
    forked.send_signal(signal.SIGTERM)
    status = Path(f"/proc/{forked.pid}/status").read_text().splitlines()
    pending = [int(line.split()[1], 16) for line in status if line.startswith(("SigPnd",
                                                                               "ShdPnd"))]
    forked.kill()
    assert forked.wait(60) == -signal.SIGKILL
    assert any(mask & 1 << (signal.SIGTERM - 1) for mask in pending), status


def test_a_started_child_is_fed_and_its_streams_merged_as_a_real_one(probe: Path) -> None:
    forked, real = _popen(probe, "message", clean_env(probe / "home"), stdin=True,
                          merge_stderr=True)
    ended = []
    for child in (forked, real):
        out, err = child.communicate("typed\n", timeout=60)
        facts = json.loads(out.splitlines()[0])
        ended.append((child.returncode, facts["stdin"], out.splitlines()[1:], err))
    assert ended[0] == ended[1] == (1, "typed\n", ["a message"], None)


def test_a_started_child_left_running_is_killed_at_the_test_s_end(probe: Path) -> None:
    forked = forkserver.start(("sleep",), probe, clean_env(probe / "home"), _server_env,
                              stdin=False, module="probe")
    assert forked is not None and forked.stdout is not None
    forked.stdout.readline()
    assert forked.poll() is None
    forkserver.reap()  # what conftest does after each test
    assert forked.returncode == -signal.SIGKILL and forked.stdout.closed


def test_a_forked_child_is_killed_at_the_timeout(probe: Path) -> None:
    with pytest.raises(subprocess.TimeoutExpired) as raised:
        forkserver.run(("sleep",), probe, "", clean_env(probe / "home"), 3, _server_env,
                       module="probe")
    assert b'"argv"' in raised.value.output
    pid = int((probe / "pid").read_text())
    with pytest.raises(ProcessLookupError):  # killed, and reaped before the timeout was raised
        os.kill(pid, 0)


def test_what_is_read_at_start_differing_runs_a_real_process(probe: Path) -> None:
    before = forkserver.STATS["real"]
    env = clean_env(probe / "home", PYTHONUTF8="1")
    assert forkserver.run(("0",), probe, "", env, 60, _server_env, module="probe") is None
    assert forkserver.STATS["real"] == before + 1
    done = run_piped(probe, "", "--version", env=env)  # then run_piped runs a real one
    assert done.returncode == 0 and done.stdout.startswith("rollchat ")


def test_the_server_can_be_turned_off(probe: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(forkserver.OFF, "1")
    assert forkserver.run(("0",), probe, "", clean_env(probe / "home"), 60, _server_env,
                          module="probe") is None


def test_a_dead_server_leaves_real_processes_with_a_warning(probe: Path) -> None:
    """(A server of the test's own is killed: own_servers; the worker's serves on after it.)"""
    env = clean_env(probe / "home")
    assert forkserver.run(("0",), probe, "", env, 60, _server_env, module="probe") is not None
    workers = forkserver._servers[()]
    with forkserver.own_servers():
        assert forkserver.run(("0",), probe, "", env, 60, _server_env, module="probe") \
            is not None
        server = forkserver._servers.get(())
        assert server is not None and server is not workers and server.process is not None
        server.process.kill()
        server.process.wait(timeout=30)
        started = time.monotonic()
        with pytest.warns(RuntimeWarning, match="fork server is off"):
            assert forkserver.run(("0",), probe, "", env, 60, _server_env, module="probe") \
                is None
        assert time.monotonic() - started < forkserver.REPLY_DEADLINE
        done = run_piped(probe, "", "--version", env=env)
        assert done.returncode == 0 and done.stdout.startswith("rollchat ")
    before = forkserver.STATS["forked"]
    assert run_piped(probe, "", "--version", env=env).stdout.startswith("rollchat ")
    assert forkserver._servers[()] is workers and forkserver.STATS["forked"] == before + 1


def test_rollchat_forked_answers_as_run(tmp_path: Path) -> None:
    before = forkserver.STATS["forked"]
    done = run_piped(tmp_path, "", "--version")
    assert done.returncode == 0 and done.stdout.startswith("rollchat ")
    assert forkserver.STATS["forked"] == before + 1


class Interrupted(Exception):
    """What pytest-timeout's signal (or a ^C) raises in the middle of a call."""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().split()[2] != "Z"


def test_a_call_interrupted_kills_its_child(probe: Path) -> None:
    pid_file = probe / "pid"

    def interrupt() -> None:  # once the child runs, an exception in the waiting caller
        deadline = time.monotonic() + 60
        while not pid_file.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        signal.pthread_kill(caller, signal.SIGUSR1)

    def raise_interrupted(signum: int, frame: object) -> None:
        raise Interrupted

    caller = threading.get_ident()
    previous = signal.signal(signal.SIGUSR1, raise_interrupted)
    interrupter = threading.Thread(target=interrupt, daemon=True)
    interrupter.start()
    try:
        with pytest.raises(Interrupted):
            forkserver.run(("sleep",), probe, "", clean_env(probe / "home"), 120, _server_env,
                           module="probe")
    finally:
        interrupter.join(70)
        signal.signal(signal.SIGUSR1, previous)
    pid = int(pid_file.read_text())
    deadline = time.monotonic() + 30
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(pid)


def test_a_child_that_fails_before_running_leaves_real_processes_with_a_warning(
        probe: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    env = clean_env(probe / "home")
    monkeypatch.setattr(forkserver, "_umask", lambda: "not a umask")  # os.umask raises
    with forkserver.own_servers():  # (the server that fails: the test's own)
        with pytest.warns(RuntimeWarning, match="a child failed: TypeError"):
            assert forkserver.run(("0",), probe, "", env, 60, _server_env, module="probe") \
                is None
        assert () not in forkserver._servers


def test_rollchat_on_path_is_forked_with_the_shell_s_streams_and_status(tmp_path: Path) -> None:
    """tests/forkrelay.py's script: a shell's ``rollchat`` (piped, redirected, failing) forked
    by the server and ending with its status; a call whose environment differs in what is read
    at start runs the real ``rollchat``."""
    from tests import forkrelay

    env = clean_env(tmp_path / "home")
    before = dict(forkserver.STATS)
    with forkrelay.rollchat_on_path(_server_env) as relay:
        env["PATH"] = f"{relay}:{env['PATH']}"
        script = ('echo "what is a token bucket?" | rollchat -p > answer; echo "piped $?"\n'
                  'rollchat --no-such-option 2> error; echo "usage $?"\n'
                  'PYTHONHASHSEED=7 rollchat --version; echo "real $?"\n')
        done = subprocess.run(["bash", "-c", script], cwd=tmp_path, env=env, text=True,
                              capture_output=True, timeout=120)
    lines = done.stdout.splitlines()
    assert lines[:2] == ["piped 0", "usage 2"] and lines[3] == "real 0", done.stderr
    assert lines[2].startswith("rollchat ")
    assert "token" in (tmp_path / "answer").read_text()
    assert "rollchat: error: no such option --no-such-option" in (tmp_path / "error").read_text()
    assert forkserver.STATS["forked"] == before.get("forked", 0) + 2
    assert forkserver.STATS["real"] == before.get("real", 0) + 1


def test_a_chat_in_a_terminal_forked_gets_the_terminal_s_keys_and_signals(
        tmp_path: Path) -> None:
    """spawn(forked=True): the chat forked by the fork server with the terminal as its own
    (counted as forked, not run as a real process) reads the terminal, a Ctrl-C typed reaches
    it, and a SIGTERM to the process the test holds ends the chat as the real one ends, by 128
    + the signal."""
    import pexpect

    from tests.e2e import PROMPT, spawn

    forked = forkserver.STATS["forked"]
    child = spawn(tmp_path, forked=True)
    try:
        child.expect_exact(PROMPT)
        child.send("half typed draft")
        child.sendintr()  # the line is dropped: a new prompt
        child.expect_exact(PROMPT)
        child.kill(signal.SIGTERM)
        child.expect("SIGTERM received")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert forkserver.STATS["forked"] == forked + 1, forkserver.STATS
    assert child.exitstatus == 128 + signal.SIGTERM


# What a child sees of the modules it did not import itself, and of its parent.
LOADED = r'''
import json, os, sys
print(json.dumps({"wave": "wave" in sys.modules, "parent": os.getppid(),
                  "grandparent": open(f"/proc/{os.getppid()}/stat").read().split()[3]}))
'''


def test_a_framework_s_children_fork_from_a_server_that_imported_it(tmp_path: Path) -> None:
    """``preload``: the child forks from a server that imported those modules (forked from
    the first server: nothing of the first is imported again); the first server's children
    still have none of them, and each is a new process."""
    (tmp_path / "loaded.py").write_text(LOADED, encoding="utf-8")
    env = clean_env(tmp_path / "home")
    runs = {preload: forkserver.run((), tmp_path, "", env, 60, _server_env, module="loaded",
                                    preload=preload)
            for preload in ((), ("wave",))}
    plain, preloaded = runs[()], runs[("wave",)]
    assert plain is not None and preloaded is not None, forkserver.STATS
    seen = [json.loads(done.stdout) for done in (plain, preloaded)]
    assert [s["wave"] for s in seen] == [False, True]
    first, framework = forkserver._servers[()], forkserver._servers[("wave",)]
    assert first.process is not None and framework.process is None
    assert seen[0]["parent"] == first.process.pid  # the first server's child
    assert seen[1]["parent"] != first.process.pid  # the framework's server's child...
    assert int(seen[1]["grandparent"]) == first.process.pid  # ...which the first one forked


def test_a_framework_server_that_fails_leaves_real_processes_with_a_warning(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(forkserver, "_off", {})  # after the test: a new server may start
    env = clean_env(tmp_path / "home")
    with pytest.warns(RuntimeWarning, match="no_such_framework.*did not start"):
        assert forkserver.run(("--version",), tmp_path, "", env, 60, _server_env,
                              preload=("no_such_framework",)) is None
    assert forkserver._off.keys() == {("no_such_framework",)}
    assert run_piped(tmp_path, "", "--version", env=env).stdout.startswith("rollchat ")
    before = forkserver.STATS["forked"]
    assert forkserver.run(("--version",), tmp_path, "", env, 60, _server_env) is not None
    assert forkserver.STATS["forked"] == before + 1  # the first server serves on


# What a process sees of its terminal; then it waits for a line (a Ctrl-C ends it).
AT_A_TERMINAL = r'''
import json, os, signal, sys
print(json.dumps({
    "ttys": [s.isatty() for s in (sys.stdin, sys.stdout, sys.stderr)],
    "line_buffering": [s.line_buffering for s in (sys.stdout, sys.stderr)],
    "session": os.getsid(0) == os.getpid(), "foreground": os.tcgetpgrp(0) == os.getpgrp(),
    "size": tuple(os.get_terminal_size()), "sigint": str(signal.getsignal(signal.SIGINT)),
    "argv": sys.argv, "cwd": os.getcwd(), "env": dict(os.environ)}))
input()
'''


def test_a_child_forked_in_a_terminal_is_the_one_pexpect_spawns(tmp_path: Path) -> None:
    """tests/e2e.py's spawn with ``preload``: a child forked by the server with a pty of its
    own as its controlling terminal; what it sees of the terminal and a Ctrl-C typed there
    are the real pexpect child's."""
    from tests.e2e import ForkedTerminal

    (tmp_path / "terminal.py").write_text(AT_A_TERMINAL, encoding="utf-8")
    env = clean_env(tmp_path / "home")
    master, slave = os.openpty()
    import fcntl
    import struct
    import termios

    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    process = forkserver.start_terminal(("x",), tmp_path, env, _server_env, slave,
                                        module="terminal")
    assert process is not None, forkserver.STATS
    forked = ForkedTerminal(master, process, 60)
    real = pexpect.spawn(sys.executable, ["-m", "terminal", "x"], cwd=str(tmp_path), env=env,
                         encoding="utf-8", timeout=60, dimensions=(40, 120),
                         preexec_fn=default_signals)
    seen = []
    for child in (forked, real):
        try:
            child.expect(r"\{.*\}")
            seen.append(json.loads(child.after))
            child.sendintr()
            child.expect_exact("KeyboardInterrupt")
            child.expect(pexpect.EOF)
            child.close()
        finally:
            child.close(force=True)
    assert seen[0] == seen[1]
    assert seen[0]["ttys"] == [True] * 3
    assert seen[0]["session"] and seen[0]["foreground"] and seen[0]["size"] == [120, 40]
    assert (forked.exitstatus, forked.signalstatus) == (real.exitstatus, real.signalstatus) \
        == (None, signal.SIGINT)
