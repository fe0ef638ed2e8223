"""MCP servers from the command line, as a user meets them: configured in the YAML file or a
Claude Code .mcp.json, started behind the first prompt, listed by ``tools``, called by the
model, held until an untrusted project file is trusted, and stopped (no orphan process) on
exit, Ctrl-C, SIGTERM and SIGHUP."""

from __future__ import annotations

import json
import os
import re
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pexpect

from tests.e2e import (
    PROMPT,
    clean_env,
    default_signals,
    run_piped,
    spawn,
    start_piped,
    write_config,
)
from tests.forkserver import Forked
from tests.mcp_helpers import (
    NOTES_SERVER,
    SERVER,
    alive,
    gone_within,
    wait_for_file,
    zygote_command,
)

PY = sys.executable


def server_yaml(script: Path, *args: str) -> str:
    """``command:`` and ``args:`` lines (at a server's indent) that start ``python SCRIPT
    ARGS`` forked by the MCP tests' zygote (tests/mcp_helpers.py: the SDK imported once)."""
    command = zygote_command(script, *args)
    return f"    command: {command[0]}\n    args: [{', '.join(command[1:])}]\n"


def notes_config(tmp_path: Path, name: str = "config.yml", **extra: str) -> Path:
    notes = '"${NOTES_FILE:-%s}"' % (tmp_path / "notes.json")
    server = server_yaml(NOTES_SERVER, "--notes", notes, "--pid-file", str(tmp_path / "server.pid"))
    return write_config(tmp_path / name, f"""\
agents:
  assistant:
    allow: ["mcp__notes__*"]  # approval: the notes tools run without asking (piped)
mcp_servers:
  notes:
{server}""")


def env_for(tmp_path: Path, **extra: str) -> dict[str, str]:
    return clean_env(tmp_path / "home", **extra)


def test_piped_chat_lists_and_calls_mcp_tools_then_stops_the_server(tmp_path: Path) -> None:
    config = notes_config(tmp_path)
    done = run_piped(tmp_path, 'use add_note {"text": "buy milk"}\nuse list_notes\ntools\n'
                     'use add_note {"text": "  "}\nexit\n', "--config", str(config),
                     env=env_for(tmp_path))
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "Added note 1: buy milk" in out and "1. buy milk" in out
    assert "mcp__notes__add_note" in out and "mcp:notes" in out
    # beside the MCP tools the archive tool is offered: it reads back cut or shortened results
    assert re.search(r"session_archive_read +built-in +ready", out)
    assert "a note needs some text" in out  # an error result, said by the model
    assert json.loads((tmp_path / "notes.json").read_text()) == ["buy milk"]
    assert gone_within(int(wait_for_file(tmp_path / "server.pid")), 5)
    transcript = next((tmp_path / "sessions").glob("*.md")).read_text()
    assert "mcp__notes__add_note" in transcript


def test_a_claude_code_mcp_json_works_as_is_and_tools_restart_restarts_from_the_chat(
        tmp_path: Path) -> None:
    # (one rollchat run and one server start for both: each is seconds of CPU)
    (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": {
        "testing": {"type": "stdio", "command": PY, "args": zygote_command(SERVER)[1:],
                    "env": {"GREETING": "${HELLO}"}},
        "old": {"type": "sse", "url": "http://127.0.0.1:9/sse"},
    }}))
    config = write_config(tmp_path / "c.yml", "mcp_servers_file: .mcp.json\n")
    done = run_piped(tmp_path, 'use add {"a": 2, "b": 3}\nuse env {"name": "GREETING"}\n'
                     "tools\ntools restart testing\ntools restart nope\nexit\n",
                     "--config", str(config), "--yes", env=env_for(tmp_path, HELLO="bonjour"))
    assert done.returncode == 0, done.stderr
    assert ("Restarting MCP server 'testing': its tools are offered from the first message "
            "after it is ready.") in done.stdout
    assert "no MCP server named 'nope' (the 'tools' listing names them)" in done.stdout + \
        done.stderr
    assert re.search(r"mcp__testing__add: 1 chars in [0-9.]+s · 5", done.stdout)
    assert re.search(r"mcp__testing__env: 7 chars in [0-9.]+s · bonjour", done.stdout)
    assert ("MCP server 'old' did not start: MCP server 'old': the sse transport is not "
            "supported") not in done.stdout + done.stderr  # one line, not repeated
    lines = [line for line in (done.stdout + done.stderr).splitlines() if "'old'" in line]
    assert len(lines) == 1 and "sse transport is not supported" in lines[0]


def test_an_untrusted_project_file_starts_no_server_until_trusted(tmp_path: Path) -> None:
    notes_config(tmp_path, "rollchat.yml")
    env = env_for(tmp_path)
    done = run_piped(tmp_path, "tools\nuse list_notes\nexit\n", env=env)
    assert done.returncode == 0, done.stderr
    assert "agents.assistant.allow, mcp_servers were ignored" in done.stdout + done.stderr
    assert "start MCP servers or run code or tools without asking" in done.stdout + done.stderr
    assert "held: rollchat.yml is not trusted; run `rollchat trust` to start it" in done.stdout
    assert "→ tool" not in done.stdout  # no tool was offered to call
    assert not (tmp_path / "server.pid").exists()  # no process was ever started
    trusted = run_piped(tmp_path, None, "trust", env=env)
    assert trusted.returncode == 0 and "mcp_servers now apply" in trusted.stdout
    done = run_piped(tmp_path, "use list_notes\nexit\n", env=env)
    assert "No notes yet." in done.stdout
    assert gone_within(int(wait_for_file(tmp_path / "server.pid")), 5)


def test_bad_server_settings_stop_rollchat_with_the_line_and_key(tmp_path: Path) -> None:
    cases = {
        "mcp_servers:\n  x:\n    url: http://127.0.0.1:1/mcp\n    headers:\n"
        "      Authorization: Bearer sk-literal\n":
            ("c.yml:3: mcp_servers.x.headers.Authorization: holds a literal value that looks "
             "like a secret; write ${VAR}"),
        "agents:\n  a:\n    mcp_servers:\n      y:\n        command: tool\n"
        "        args: [\"${A\"]\n":
            "c.yml:5: agents.a.mcp_servers.y.args[0]: has a '${' without its closing '}'",
        "mcp_servers:\n  z:\n    command: tool\n    url: http://127.0.0.1:1\n":
            "mcp_servers.z.url: set command (a stdio server) or url (an HTTP server), not both",
        "mcp_servers_file: missing.json\n": "cannot read",
    }
    for text, expected in cases.items():
        config = write_config(tmp_path / "c.yml", text)
        done = run_piped(tmp_path, "exit\n", "--config", str(config), env=env_for(tmp_path))
        assert done.returncode == 2 and expected in done.stderr, (text, done.stderr)
        assert len(done.stderr.strip().splitlines()) == 1


def _piped_process(tmp_path: Path) -> tuple[subprocess.Popen[str] | Forked, int]:
    """A piped chat (forked by the tests' fork server: its start is not the point) that has
    called its server once."""
    config = notes_config(tmp_path)
    process = start_piped(tmp_path, "--config", str(config), env=env_for(tmp_path))
    assert process.stdin is not None
    process.stdin.write("use list_notes\n")
    process.stdin.flush()
    try:
        pid = int(wait_for_file(tmp_path / "server.pid", 60))  # rollchat, then its server
        assert alive(pid)
        _answered(process)
    except BaseException:
        process.kill()
        raise
    return process, pid


def _answered(process: subprocess.Popen[str] | Forked, seconds: float = 60) -> None:
    """Wait until rollchat has answered the piped ``use list_notes`` (the turn's ``Time:``
    footer on its stdout): the server ran the call, and rollchat reads the next line."""
    assert process.stdout is not None
    fd, said, deadline = process.stdout.fileno(), b"", time.monotonic() + seconds
    while b"Time:" not in said:
        left = deadline - time.monotonic()
        assert left > 0 and select.select([fd], [], [], left)[0], said.decode(errors="replace")
        chunk = os.read(fd, 65536)
        assert chunk, f"rollchat ended: {said.decode(errors='replace')}"
        said += chunk


def test_sigterm_stops_the_servers(tmp_path: Path) -> None:
    process, pid = _piped_process(tmp_path)
    try:
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=60)
        assert process.returncode == 128 + signal.SIGTERM, err
        assert gone_within(pid, 5)
    finally:
        process.kill()


def test_ctrl_c_of_piped_rollchat_stops_the_servers(tmp_path: Path) -> None:
    process, pid = _piped_process(tmp_path)
    try:
        process.send_signal(signal.SIGINT)
        process.communicate(timeout=60)
        assert gone_within(pid, 5)
    finally:
        process.kill()


def test_in_a_terminal_servers_start_behind_the_prompt_and_stop_on_exit(
        tmp_path: Path) -> None:
    sleeping = tmp_path / "sleeping"
    server = server_yaml(SERVER, "--pid-file", str(tmp_path / "server.pid"), "--sleeping-file",
                         str(sleeping))
    config = write_config(tmp_path / "config.yml", f"""\
agents:
  assistant:
    allow: ["mcp__testing__*"]
mcp_servers:
  testing:
{server}""")
    # (forked: a process of its own in a session of its own with the terminal as its own, as
    # pexpect's child; a Ctrl-C typed reaches the terminal's foreground group, the chat's)
    child = spawn(tmp_path, "--config", str(config), env=env_for(tmp_path), forked=True)
    child.expect(PROMPT)
    pid = int(wait_for_file(tmp_path / "server.pid"))  # started with no message sent
    child.sendline("tools")
    child.expect("mcp:testing")
    child.sendline('use sleep {"seconds": 60}')
    wait_for_file(sleeping, 60)  # the server runs the call (a fixed sleep hoped it did)
    child.sendintr()  # Ctrl-C stops the call: the server is in its own process group
    child.expect("interrupted")
    child.expect(PROMPT)
    assert alive(pid)
    child.sendline('use add {"a": 2, "b": 40}')
    child.expect(r"mcp__testing__add: 2 chars")  # the server still answers
    child.expect(PROMPT)
    child.sendcontrol("c")  # Ctrl-C at the prompt: the line is cleared, nothing stops
    assert alive(pid)
    child.sendline("exit")
    child.expect(pexpect.EOF, timeout=60)
    assert gone_within(pid, 5)


def test_sighup_stops_the_servers(tmp_path: Path) -> None:
    config = notes_config(tmp_path)
    child = spawn(tmp_path, "--config", str(config), env=env_for(tmp_path), forked=True)
    child.expect(PROMPT)
    pid = int(wait_for_file(tmp_path / "server.pid"))
    child.kill(signal.SIGHUP)
    child.expect(pexpect.EOF, timeout=60)
    assert gone_within(pid, 5)


# Run in a terminal with the REPL replaced: is the mcp SDK loaded when the first prompt would
# be drawn, and which thread loads it?
PROBE = """
import sys, threading, time
import rollchat.ui.repl as repl

class Watch:
    def find_spec(self, name, path=None, target=None):
        if name == "mcp":
            print("IMPORTED-IN", threading.current_thread().name, flush=True)
        return None

sys.meta_path.insert(0, Watch())

def report(chat, **kwargs):
    print("AT-PROMPT", "mcp" in sys.modules, flush=True)
    app = chat.get()
    repl.handle_line(app, 'use add {"a": 1, "b": 2}')
    repl.finish(app)

repl.run_interactive = report
from rollchat.cli.app import build_cli
build_cli()(["--config", sys.argv[1]], prog_name="rollchat")
"""


def test_the_sdk_is_imported_only_in_the_background(tmp_path: Path) -> None:
    config = write_config(tmp_path / "c.yml", f"mcp_servers:\n  t:\n{server_yaml(SERVER)}"
                          "agents:\n  assistant:\n    allow: [\"mcp__*\"]\n")
    child = pexpect.spawn(PY, ["-c", PROBE, str(config)], cwd=str(tmp_path),
                          env=env_for(tmp_path), encoding="utf-8", timeout=60,
                          preexec_fn=default_signals)
    child.expect("AT-PROMPT (True|False)")
    assert child.match.group(1) == "False"
    child.expect("IMPORTED-IN (\\S+)")
    assert child.match.group(1) == "rollchat-mcp"
    child.expect("mcp__t__add says:")  # the offline model quotes the result
    child.expect(pexpect.EOF)


def test_the_readme_walkthrough(tmp_path: Path) -> None:
    """docs/mcp.md's walkthrough: the example agent in examples/mcp, trusted, then used."""
    page = (Path(__file__).resolve().parents[2] / "docs" / "mcp.md").read_text(encoding="utf-8")
    section = page.split("\n## ", 1)[0]
    example = tmp_path / "mcp"
    example.mkdir()
    for name in ("rollchat.yml", "notes_server.py"):
        (example / name).write_bytes((NOTES_SERVER.parent / name).read_bytes())
    env = env_for(tmp_path, PATH=f"{Path(PY).parent}{os.pathsep}{os.environ['PATH']}")
    lines = [line.removeprefix("You: ") for line in section.splitlines()
             if line.startswith("You: ")]
    assert lines and "rollchat trust" in section
    trusted = run_piped(example, None, "trust", env=env)
    assert trusted.returncode == 0, trusted.stderr
    done = run_piped(example, "\n".join([*lines, "exit", ""]), env=env)
    assert done.returncode == 0, done.stderr
    for expected in ("mcp__notes__add_note", "Added note 1: buy milk", "1. buy milk"):
        assert expected in done.stdout
    assert json.loads((example / "notes.json").read_text()) == ["buy milk"]
