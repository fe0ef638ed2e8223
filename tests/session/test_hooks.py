"""Hooks as a user meets them, through the CLI: a PreToolUse hook refuses a call (piped against
the Anthropic wire server: its stderr is the tool result the model reads; and in a terminal,
before anyone is asked), PostToolUse adds to a result, UserPromptSubmit and SessionStart add
context to the message and never to the system prompt, PreCompact sees the transcript and
cancels a compact, a hook past its timeout is killed with what it started, and an untrusted
./rollchat.yml runs none of them."""

from __future__ import annotations

import json
import os
import shlex
import sys
import time
from pathlib import Path
from typing import Any

from rollchat.storage.transcript import parse
from tests.e2e import PROMPT, clean_env, run_piped, write_config
from tests.terminal import Terminal, run_chat
from tests.wire_servers import WireServer, anthropic_server, text, tool

__all__ = ["anthropic_server"]  # the fixture, imported for pytest

ROOT = Path(__file__).resolve().parents[2]
AGENT = ROOT / "examples" / "hooks" / "agent.py"  # write_file, delete_file; approval: auto
PY = shlex.quote(sys.executable)

# A hook that records what it was given (one JSON line per call in LOG, named by its event),
# then behaves as its arguments say: "block REASON" exits 2 with REASON on stderr, "say TEXT"
# prints TEXT, "sleep N" starts a child that sleeps N seconds (its pid in sleeper.pid) and
# waits for it, "fail" exits 1.
HOOK = '''
import json, subprocess, sys
event = json.load(sys.stdin)
with open("hooks.log", "a", encoding="utf-8") as log:
    log.write(json.dumps(event) + "\\n")
what = sys.argv[1:]
if what and what[0] == "block":
    print(" ".join(what[1:]), file=sys.stderr)
    sys.exit(2)
if what and what[0] == "say":
    print(" ".join(what[1:]))
if what and what[0] == "sleep":
    child = subprocess.Popen(["sleep", what[1]])
    open("sleeper.pid", "w").write(str(child.pid))
    child.wait()
if what and what[0] == "fail":
    sys.exit(1)
if what and what[0] == "copy":
    import shutil
    shutil.copy(event["transcript_path"], "seen.md")
    sys.exit(2 if what[1] == "cancel" else 0)
'''


def _hook(tmp_path: Path, *args: str) -> str:
    script = tmp_path / "hook.py"
    script.write_text(HOOK, encoding="utf-8")
    return " ".join([PY, shlex.quote(str(script)), *map(shlex.quote, args)])


def _log(where: Path) -> list[dict[str, Any]]:
    path = where / "hooks.log"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _config(tmp_path: Path, hooks: str, agent: str = "") -> Path:
    return write_config(tmp_path / "config.yml", f"""\
{agent}summary:
  provider: offline
memory:
  enabled: false
ui:
  offline_word_delay: 0
hooks:
{hooks}""")


def test_a_pretooluse_hook_refuses_a_call_and_the_model_reads_why(
        anthropic_server: WireServer, tmp_path: Path) -> None:
    (tmp_path / "keep").mkdir()
    (tmp_path / "keep" / "plan.md").write_text("ship\n", encoding="utf-8")
    config = _config(tmp_path, f"""\
  PreToolUse:
    - matcher: delete_.*
      hooks:
        - {{type: command, command: {json.dumps(_hook(tmp_path, "block", "keep/ stays"))}}}
  PostToolUse:
    - matcher: write_file
      command: {json.dumps(_hook(tmp_path, "say", "formatted by the hook"))}
  UserPromptSubmit:
    - command: {json.dumps(_hook(tmp_path, "say", "branch: main"))}
  SessionStart:
    - command: {json.dumps(_hook(tmp_path, "say", "on call: Ada"))}
""")
    anthropic_server.push(
        tool("delete_file", {"path": "keep/plan.md"}, tool_id="c1"), text("It is kept."),
        tool("write_file", {"path": "a.txt", "text": "hi"}, tool_id="c2"), text("Written."))
    env = clean_env(tmp_path / "home", ANTHROPIC_API_KEY="test")
    done = run_piped(tmp_path, "delete keep/plan.md\nwrite a.txt\n", "--config", str(config),
                     "--provider", "anthropic", "--model", "m", "--base-url",
                     anthropic_server.url, str(AGENT), env=env)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    assert (tmp_path / "keep" / "plan.md").exists()  # the call never ran
    assert "← delete_file: refused by a PreToolUse hook: keep/ stays" in out
    bodies = anthropic_server.bodies
    [refused] = [b["content"] for m in bodies[1]["messages"] if m["role"] == "user"
                 for b in m["content"] if isinstance(b, dict) and b["type"] == "tool_result"]
    assert refused == "refused by a PreToolUse hook: keep/ stays" or refused[0]["text"] == (
        "refused by a PreToolUse hook: keep/ stays")
    written = json.dumps(bodies[3]["messages"][-1]["content"])
    assert "wrote a.txt (3 bytes)\\n\\n[PostToolUse hook: formatted by the hook]" in written
    # the hooks' context: in the first message's context block, never in the system prompt
    first = bodies[0]["messages"][0]["content"][-1]["text"]
    assert first.startswith("<context>\nFrom the user's hooks:\non call: Ada\nbranch: main\n"
                            "</context>\n\ndelete keep/plan.md")
    assert all("Ada" not in json.dumps(b["system"]) for b in bodies)
    assert bodies[0]["system"] == bodies[3]["system"]
    events = [(e["hook_event_name"], e.get("tool_name")) for e in _log(tmp_path)]
    assert events == [("SessionStart", None), ("UserPromptSubmit", None),
                      ("PreToolUse", "delete_file"), ("UserPromptSubmit", None),
                      ("PostToolUse", "write_file")]
    pre = _log(tmp_path)[2]
    assert pre["tool_input"] == {"path": "keep/plan.md"} and pre["cwd"] == str(tmp_path)
    [session] = (tmp_path / "sessions").glob("*.md")
    assert pre["session_id"] == session.stem and pre["transcript_path"] == str(session)


def test_a_pretooluse_hook_refuses_before_anyone_is_asked_in_a_terminal(tmp_path: Path) -> None:
    config = _config(tmp_path, f"""\
  PreToolUse:
    - matcher: delete_file
      command: {json.dumps(_hook(tmp_path, "block", "never delete here"))}
""", agent=f"agents:\n  assistant:\n    file: {AGENT}\n    approval: ask\n")
    (tmp_path / "a.txt").write_text("x\n", encoding="utf-8")

    def script(term: Terminal) -> None:
        term.expect(PROMPT)
        term.sendline('use delete_file {"path": "a.txt"}')
        index = term.expect_any(["Allow\\?", "refused by a PreToolUse hook: never delete here"])
        assert index == 1, term.before
        term.expect(PROMPT)
        term.sendline('use write_file {"path": "b.txt", "text": "y"}')  # the gate still asks
        term.expect("Allow\\?")
        term.sendline("y")
        term.expect(PROMPT)
        term.sendline("exit")

    assert run_chat(tmp_path, ["--config", str(config), "--provider", "offline"],
                    script, env=clean_env(tmp_path / "home")) == 0
    assert (tmp_path / "a.txt").exists() and (tmp_path / "b.txt").exists()


def test_a_precompact_hook_sees_the_transcript_and_cancels_a_compact(tmp_path: Path) -> None:
    cancel = _config(tmp_path, f"""\
  PreCompact:
    - matcher: manual
      command: {json.dumps(_hook(tmp_path, "copy", "cancel"))}
  PostCompact:
    - command: {json.dumps(_hook(tmp_path))}
""")
    env = clean_env(tmp_path / "home")
    done = run_piped(tmp_path, "the launch code is 0000\ncompact\nstill here\n", "--config",
                     str(cancel), "--provider", "offline", env=env)
    assert done.returncode == 0, done.stderr
    assert "Compaction cancelled by a PreCompact hook: " in done.stdout
    [session] = (tmp_path / "sessions").glob("*.md")  # no child: the compact never ran
    seen = (tmp_path / "seen.md").read_text(encoding="utf-8")
    assert "the launch code is 0000" in seen and "still here" not in seen
    [pre] = _log(tmp_path)
    assert pre == {"session_id": session.stem, "transcript_path": str(session),
                   "cwd": str(tmp_path), "hook_event_name": "PreCompact",
                   "trigger": "manual", "custom_instructions": ""}
    turns = parse(session.read_text(encoding="utf-8")).turns
    assert [t.user for t in turns] == ["the launch code is 0000", "still here"]

    go = _config(tmp_path, f"""\
  PreCompact:
    - command: {json.dumps(_hook(tmp_path, "copy", "go"))}
  PostCompact:
    - command: {json.dumps(_hook(tmp_path))}
""")
    (tmp_path / "hooks.log").unlink()
    done = run_piped(tmp_path, "more\ncompact keep the code\n", "--config", str(go),
                     "--provider", "offline", "-c", env=env)
    assert done.returncode == 0, done.stderr
    pre, post = _log(tmp_path)
    assert (pre["hook_event_name"], pre["custom_instructions"]) == ("PreCompact",
                                                                    "keep the code")
    assert post["hook_event_name"] == "PostCompact" and post["trigger"] == "manual"
    assert post["session_id"] != pre["session_id"]  # told from the new session
    assert "Starting new session with summary" in done.stdout  # the compact went on


def test_a_hook_past_its_timeout_is_killed_with_what_it_started(tmp_path: Path) -> None:
    config = _config(tmp_path, f"""\
  UserPromptSubmit:
    - hooks:
        - {{type: command, command: {json.dumps(_hook(tmp_path, "sleep", "60"))}, timeout: 1}}
        - {{type: command, command: {json.dumps(_hook(tmp_path, "fail"))}}}
""")
    started = time.monotonic()
    done = run_piped(tmp_path, "hello\n", "--config", str(config), "--provider", "offline",
                     env=clean_env(tmp_path / "home"))
    assert done.returncode == 0, done.stderr
    assert time.monotonic() - started < 50  # the hook's 60 s sleep was not waited for
    lines = done.stdout.splitlines()
    assert sum("took longer than 1s and was killed; going on" in line for line in lines) == 1
    assert sum("exited with status 1; going on" in line for line in lines) == 1
    assert "Hello" in done.stdout  # the message went on
    pid = int((tmp_path / "sleeper.pid").read_text())
    deadline = time.monotonic() + 10
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(pid)  # the hook's own child was killed with it


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().split()[2] == "Z")


def test_a_userpromptsubmit_block_keeps_the_message_unanswered(tmp_path: Path) -> None:
    config = _config(tmp_path, f"""\
  UserPromptSubmit:
    - command: {json.dumps(_hook(tmp_path, "block", "no secrets please"))}
""")
    done = run_piped(tmp_path, "my password is hunter2\n", "--config", str(config),
                     "--provider", "offline", env=clean_env(tmp_path / "home"))
    assert done.returncode == 0, done.stderr
    assert "A UserPromptSubmit hook blocked the message" in done.stdout
    [session] = (tmp_path / "sessions").glob("*.md")
    [turn] = parse(session.read_text(encoding="utf-8")).turns
    assert turn.user == "my password is hunter2" and turn.status == "unanswered"
    assert turn.error == "blocked by a UserPromptSubmit hook: no secrets please"


def test_an_untrusted_project_files_hooks_never_run(tmp_path: Path) -> None:
    project = tmp_path / "repo"
    project.mkdir()
    (project / "rollchat.yml").write_text(f"""\
hooks:
  SessionStart:
    - command: {json.dumps(_hook(tmp_path, "say", "x"))}
  UserPromptSubmit:
    - command: {json.dumps(_hook(tmp_path, "say", "y"))}
  SessionEnd:
    - command: {json.dumps(_hook(tmp_path))}
""", encoding="utf-8")
    env = clean_env(tmp_path / "home")
    done = run_piped(project, "hello\n", "--provider", "offline", env=env)
    assert done.returncode == 0, done.stderr
    assert _log(project) == []
    notice = [line for line in done.stdout.splitlines() if "hooks" in line]
    assert len(notice) == 1 and "is not trusted, so hooks was ignored" in notice[0]
    assert "run commands (hooks)" in notice[0]
    trusted = run_piped(project, "", "trust", env=env)  # `rollchat trust`, then they run
    assert trusted.returncode == 0, trusted.stderr
    done = run_piped(project, "hello\n", "--provider", "offline", env=env)
    assert [e["hook_event_name"] for e in _log(project)] == [
        "SessionStart", "UserPromptSubmit", "SessionEnd"]


def test_a_precompact_hook_cannot_stop_an_automatic_compaction(tmp_path: Path) -> None:
    config = _config(tmp_path, f"""\
  PreCompact:
    - command: {json.dumps(_hook(tmp_path, "block", "not now"))}
  PostCompact:
    - matcher: auto
      command: {json.dumps(_hook(tmp_path))}
""").read_text(encoding="utf-8")
    path = write_config(tmp_path / "auto.yml", config.replace(
        "memory:", "session:\n  compact_every_turns: 2\n  keep_recent_turns: 1\nmemory:"))
    done = run_piped(tmp_path, "one\ntwo\nthree\n", "--config", str(path), "--provider",
                     "offline", env=clean_env(tmp_path / "home"))
    assert done.returncode == 0, done.stderr
    assert "A PreCompact hook objected (not now); an automatic compaction goes on" in done.stdout
    events = [(e["hook_event_name"], e.get("trigger")) for e in _log(tmp_path)]
    assert events == [("PreCompact", "auto"), ("PostCompact", "auto")]
    assert _log(tmp_path)[0]["session_id"] != _log(tmp_path)[1]["session_id"]
