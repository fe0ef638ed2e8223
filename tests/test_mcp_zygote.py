"""The MCP tests' server zygote (tests/mcp_zygote.py, tests/mcp_launch.py): the launcher a
command line starts stands for a server forked with its streams, cwd, environment, umask and
argv (a script, or ``-m MODULE``); the signals it gets reach the server, it ends as the server
ended, and killed, its server is killed too. The zygote gone, the launcher runs the real one."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from tests import mcp_helpers
from tests.mcp_helpers import gone_within, wait_for_file, wait_until, zygote_command

# What a server sees of itself; printed as JSON; then it ends as its first argument says.
PROBE = r'''
import json, os, signal, sys, time
end = sys.argv[1]
if end == "term":  # caught (before the facts: the test signals once it read them)
    signal.signal(signal.SIGTERM, lambda *_: (print("got TERM", flush=True), sys.exit(5)))
facts = {"argv": sys.argv[1:], "cwd": os.getcwd(), "env": os.environ.get("PROBE_VALUE"),
         "stdin": sys.stdin.readline(), "name": __name__, "pid": os.getpid(),
         "umask": [l for l in open("/proc/self/status") if l.startswith("Umask")],
         "sdk": "mcp.server.mcpserver" in sys.modules, "path0": sys.path[0]}
print(json.dumps(facts), flush=True)
print("to stderr", file=sys.stderr, flush=True)
if end == "code":  # (after some CPU: a forked child's is told, in clock ticks)
    while time.process_time() < 0.05:
        pass
    sys.exit(7)
if end in ("term", "wait"):
    time.sleep(120)
'''


def _probe(tmp_path: Path) -> Path:
    path = tmp_path / "probe.py"
    path.write_text(PROBE, encoding="utf-8")
    return path


def _start(command: list[str], cwd: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(command, cwd=cwd, env={**os.environ, "PROBE_VALUE": "seen"},
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _facts(process: subprocess.Popen[str]) -> dict[str, object]:
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write("a line\n")
    process.stdin.flush()
    return json.loads(process.stdout.readline())  # type: ignore[no-any-return]


def test_a_forked_server_is_the_process_python_script_starts(tmp_path: Path) -> None:
    probe = _probe(tmp_path)
    old = os.umask(0o027)  # (not the zygote's: the caller's, as a child of it inherits)
    try:
        forked = _start(zygote_command(probe, "code", "x y"), tmp_path)
        real = _start([sys.executable, str(probe), "code", "x y"], tmp_path)
    finally:
        os.umask(old)
    seen, expected = _facts(forked), _facts(real)
    assert forked.wait(30) == real.wait(30) == 7
    assert forked.pid != seen["pid"]  # the launcher stands for the server
    assert seen.pop("sdk") is True and expected.pop("sdk") is False  # (what it saves)
    for facts in (seen, expected):
        facts.pop("pid")
    assert seen == expected == {"argv": ["code", "x y"], "cwd": str(tmp_path), "env": "seen",
                                "stdin": "a line\n", "name": "__main__",
                                "path0": str(tmp_path), "umask": ["Umask:\t0027\n"]}
    assert forked.stderr is not None and forked.stderr.read() == "to stderr\n"


def test_a_module_is_run_as_python_m_runs_it_and_its_cpu_is_told(tmp_path: Path) -> None:
    (tmp_path / "probe_module.py").write_text(PROBE, encoding="utf-8")
    forked = _start(zygote_command("-m", "probe_module", "code"), tmp_path)
    before = mcp_helpers.zygote_cpu()  # (its own: the SDK's import)
    seen = _facts(forked)
    assert forked.wait(30) == 7
    wait_until(lambda: mcp_helpers.zygote_cpu() > before)  # and the ended child's (bench)
    assert (seen["argv"], seen["name"], seen["path0"]) == (["code"], "__main__", str(tmp_path))


def test_signals_reach_the_server_and_the_launcher_ends_as_it_did(tmp_path: Path) -> None:
    probe = _probe(tmp_path)
    caught = _start(zygote_command(probe, "term"), tmp_path)
    _facts(caught)
    caught.send_signal(signal.SIGTERM)
    assert caught.stdout is not None and caught.stdout.readline() == "got TERM\n"
    assert caught.wait(30) == 5
    ended = _start(zygote_command(probe, "wait"), tmp_path)
    pid = int(str(_facts(ended)["pid"]))
    ended.send_signal(signal.SIGHUP)
    assert ended.wait(30) == -signal.SIGHUP and gone_within(pid, 10)
    killed = _start(zygote_command(probe, "wait"), tmp_path)
    pid = int(str(_facts(killed)["pid"]))
    os.kill(pid, signal.SIGKILL)  # the server killed: the launcher ends so
    assert killed.wait(30) == -signal.SIGKILL


def test_a_killed_launcher_takes_its_server_with_it(tmp_path: Path) -> None:
    probe = _probe(tmp_path)
    launcher = _start(zygote_command(probe, "wait"), tmp_path)
    pid = int(str(_facts(launcher)["pid"]))
    launcher.kill()
    launcher.wait(30)
    assert gone_within(pid, 10)


def test_without_the_zygote_the_launcher_runs_the_real_server(tmp_path: Path) -> None:
    probe = _probe(tmp_path)
    command = zygote_command(probe, "code")
    command[command.index(str(probe)) - 1] = str(tmp_path / "no-such-socket")
    real = _start(command, tmp_path)
    seen = _facts(real)
    assert real.wait(30) == 7 and seen["pid"] == real.pid and seen["sdk"] is False
    pid_file = tmp_path / "pid"  # and the test server itself, the same way
    launcher = command[:command.index(str(probe))]
    server = _start([*launcher, str(mcp_helpers.SERVER), "--pid-file", str(pid_file),
                     "--crash"], tmp_path)
    assert server.wait(60) == 3 and int(wait_for_file(pid_file)) == server.pid


def test_the_zygote_s_end_ends_its_servers_and_its_folder(tmp_path: Path) -> None:
    """(Its end: the session's, or its pytest worker gone. The next launch starts another.
    The zygote ended is the test's own: own_zygote; the worker's serves on after it.)"""
    workers = mcp_helpers._zygote
    with mcp_helpers.own_zygote():
        launcher = _start(zygote_command(_probe(tmp_path), "wait"), tmp_path)
        pid = int(str(_facts(launcher)["pid"]))
        zygote = mcp_helpers._zygote
        assert zygote is not None and zygote.socket.exists()
        zygote.control.close()  # as when the worker is gone: the zygote sees its end
        zygote.process.wait(30)
        assert gone_within(pid, 10) and launcher.wait(30) == -signal.SIGKILL
        assert not zygote.folder.exists() and zygote is not workers
        mcp_helpers.stop_zygote()
    assert mcp_helpers._zygote is workers
