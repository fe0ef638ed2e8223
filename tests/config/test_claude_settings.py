"""Issue 35 item 6: Claude Code's settings carry over. ``~/.claude/settings.json`` (the user's)
and ``./.claude/settings.json`` (a project's, under rollchat.yml's trust rule) give their hooks
(Stop and Notification included) and permissions (``mcp__server__tool`` and rollchat tool
names; ``Bash(...)``-style argument rules and Claude Code's own tools reported); what rollchat
cannot honour is one line each, never a silent skip nor a refusal of the whole file.

data/claude_settings_famtastic.json is a real project settings file, copied unchanged from
github.com/famtastic-fritz/famtastic at 755ccb8d (.claude/settings.json)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rollchat.config.load import load_config
from rollchat.domain import ToolCall
from rollchat.session.hooked import notifying
from rollchat.tools.hooks import Hooks
from tests.e2e import HELPER_AGENT, clean_env, run_piped

REAL = Path(__file__).parent / "data" / "claude_settings_famtastic.json"
HELPER = HELPER_AGENT
USE = 'use word_count text="one two three"\nexit\n'


def _write(path: Path, data: dict[str, Any] | str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return path


def _load(project: Path, home: Path) -> Any:
    return load_config(config_path=None, env={"HOME": str(home)}, cwd=project,
                       user_config_dir=home / "config" / "rollchat")


def test_a_real_project_file_is_read_and_held_until_trusted(tmp_path: Path) -> None:
    project, home = tmp_path / "p", tmp_path / "home"
    _write(project / ".claude" / "settings.json", REAL.read_text(encoding="utf-8"))
    config = _load(project, home)
    assert config.hooks == ()
    assert config.settings_notes == (
        ".claude/settings.json is not trusted, so these are ignored: hooks (they run commands "
        "or let tools run unasked); if you trust the file, run `rollchat trust "
        ".claude/settings.json`",)
    done = run_piped(project, None, "trust", ".claude/settings.json", env=clean_env(home))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Trusted .claude/settings.json: its hooks now applies ")
    config = _load(project, home)
    assert [(h.event, h.matcher, h.timeout) for h in config.hooks] == [
        ("SessionStart", None, 5.0), ("SessionStart", None, 8.0), ("PreCompact", None, 8.0),
        ("PreToolUse", "Read", 5.0), ("PreToolUse", "Write|Edit|MultiEdit", 5.0),
        ("PostToolUse", "Read", 5.0), ("PostToolUse", "Write|Edit|MultiEdit", 10.0),
        ("Stop", None, 10.0), ("Stop", None, 8.0)]
    assert config.settings_notes == ()


def test_permissions_map_to_rollchat_rules_and_the_rest_is_named(tmp_path: Path) -> None:
    project, home = tmp_path / "p", tmp_path / "home"
    project.mkdir()
    _write(home / ".claude" / "settings.json", {
        "$schema": "https://json.schemastore.org/claude-code-settings.json",
        "model": "opus", "env": {"X": "1"},
        "permissions": {
            "allow": ["mcp__notes__add_note", "mcp__files", "word_count", "count_*",
                      "Bash(npm run test:*)", "WebFetch", 7],
            "deny": ["mcp__notes__delete_note", "Read(./.env)"],
            "ask": ["count_*"],
            "defaultMode": "acceptEdits"},
        "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "true"}]}],
                  "SubagentStop": [{"hooks": [{"type": "command", "command": "true"}]}],
                  "PreToolUse": [{"matcher": "Bash", "hooks": [
                      {"type": "prompt", "prompt": "is this safe?"}]}]},
    })
    config = _load(project, home)
    assert config.agent.allow == ("mcp__notes__add_note", "mcp__files__*", "word_count")
    assert config.agent.deny == ("mcp__notes__delete_note",)
    assert [(h.event, h.command) for h in config.hooks] == [("Stop", "true")]
    where = "~/.claude/settings.json"
    assert config.settings_notes == (
        f"{where}: hooks.SubagentStop: an event rollchat does not have (it has SessionStart, "
        "UserPromptSubmit, PreToolUse, PostToolUse, PreCompact, PostCompact, SessionEnd, Stop, "
        "Notification); not run",
        f"{where}: hooks.PreToolUse[0].hooks[0]: a 'prompt' hook; rollchat runs command hooks "
        "only",
        f"{where}: permissions.allow: 'Bash(npm run test:*)': rollchat's rules match whole "
        "tools, not their arguments; not used",
        f"{where}: permissions.allow: 'WebFetch': WebFetch is Claude Code's own tool, which "
        "rollchat does not have; not used",
        f"{where}: permissions.allow: 7 is not a tool rule; not used",
        f"{where}: permissions.deny: 'Read(./.env)': rollchat's rules match whole tools, not "
        "their arguments; not used",
        f"{where}: permissions.defaultMode: a Claude Code setting rollchat has no counterpart "
        "for; not used",
        f"{where}: env, model are Claude Code's alone; rollchat uses only hooks and "
        "permissions",
    )


def test_a_broken_file_is_one_line_and_the_chat_goes_on(tmp_path: Path) -> None:
    project, home = tmp_path / "p", tmp_path / "home"
    _write(project / ".claude" / "settings.json", "{not json")
    config = _load(project, home)
    assert len(config.settings_notes) == 1
    assert config.settings_notes[0].startswith(".claude/settings.json: not valid JSON (")


def test_allow_from_the_users_file_and_the_trusted_projects_lets_a_tool_run(
        tmp_path: Path) -> None:
    project, home = tmp_path / "p", tmp_path / "home"
    _write(project / "helper.py", HELPER)
    env = clean_env(home)
    allow = {"permissions": {"allow": ["word_count"]}}
    settings = _write(project / ".claude" / "settings.json", allow)
    done = run_piped(project, USE, "helper.py", env=env)
    assert done.returncode == 0, done.stderr
    assert "3 words" not in done.stdout and "needs the user's approval" in done.stdout
    assert ("Warning: .claude/settings.json is not trusted, so these are ignored: "
            "permissions.allow") in done.stdout
    assert run_piped(project, None, "trust", str(settings), env=env).returncode == 0
    done = run_piped(project, USE, "helper.py", env=env)
    assert "3 words" in done.stdout and "Warning" not in done.stdout, done.stdout
    settings.unlink()
    _write(home / ".claude" / "settings.json", allow)  # the user's own: trusted
    done = run_piped(project, USE, "helper.py", env=env)
    assert "3 words" in done.stdout and "Warning" not in done.stdout, done.stdout
    # a deny rule needs no trust: it only takes away
    _write(project / ".claude" / "settings.json", {"permissions": {"deny": ["word_count"]}})
    done = run_piped(project, USE, "helper.py", "--yes", env=env)
    assert "3 words" not in done.stdout and "denied" in done.stdout.lower(), done.stdout


def test_stop_runs_after_each_answer_and_notification_before_a_question(
        tmp_path: Path) -> None:
    project, home = tmp_path / "p", tmp_path / "home"
    project.mkdir()
    log = tmp_path / "stops.jsonl"
    _write(home / ".claude" / "settings.json", {"hooks": {"Stop": [{"matcher": "", "hooks": [
        {"type": "command", "command": f"cat >> {log}; echo >> {log}"}]}]}})
    done = run_piped(project, "hello\nagain\nexit\n", env=clean_env(home))
    assert done.returncode == 0, done.stderr
    stops = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    assert [s["hook_event_name"] for s in stops] == ["Stop", "Stop"]
    assert stops[0]["stop_hook_active"] is False and stops[0]["session_id"]

    told = tmp_path / "notified.json"
    assert notifying(lambda c, t: "y", None)(ToolCall("1", "x", {}), None) == "y"  # type: ignore[arg-type]
    _write(home / ".claude" / "settings.json", {"hooks": {"Notification": [{"hooks": [
        {"type": "command", "command": f"cat > {told}"}]}]}})
    config = _load(project, home)
    hooks = Hooks(config.hooks, cwd=project)
    asked: list[str] = []

    def ask(call: ToolCall, tool: object) -> str:
        asked.append(call.name)
        assert told.exists()  # the hook was told before the question
        return "n"

    answer = notifying(ask, hooks)(ToolCall("1", "word_count", {}), None)  # type: ignore[arg-type]
    assert answer == "n" and asked == ["word_count"]
    payload = json.loads(told.read_text())
    assert payload["hook_event_name"] == "Notification"
    assert payload["message"] == "rollchat needs your permission to use word_count"


def test_an_agent_files_own_rules_keep_the_settings_rules(tmp_path: Path) -> None:
    project, home = tmp_path / "p", tmp_path / "home"
    _write(project / "helper.py", HELPER + 'deny = ["other_tool"]\n')
    _write(home / ".claude" / "settings.json", {"permissions": {"deny": ["word_count"]}})
    done = run_piped(project, USE, "helper.py", "--yes", env=clean_env(home))
    assert done.returncode == 0, done.stderr
    assert "3 words" not in done.stdout and "denied" in done.stdout.lower(), done.stdout
