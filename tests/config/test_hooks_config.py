"""The ``hooks:`` setting read from a file: Claude Code's shape (a settings.json ``hooks``
object, as YAML) and the short form; each mistake named with its file, line and key; an
untrusted project file's hooks read, held and named in the trust line."""

from __future__ import annotations

from pathlib import Path

import pytest

from rollchat.config.file import load_file
from rollchat.config.hooks import DEFAULT_TIMEOUT, HookConfig
from rollchat.config.load import load_config
from rollchat.errors import ConfigError

# The hooks object of a Claude Code settings.json, as its docs show it (JSON is YAML).
CLAUDE_SHAPE = """\
hooks: {"PreToolUse": [{"matcher": "Bash|shell", "hooks": [{"type": "command",
        "command": "./check.sh", "timeout": 5}]}],
        "PreCompact": [{"matcher": "manual", "hooks": [{"type": "command",
        "command": "cp \\"$CLAUDE_PROJECT_DIR/x\\" /tmp"}]}],
        "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "date"}]}]}
"""


def _load(tmp_path: Path, text: str) -> tuple[HookConfig, ...]:
    path = tmp_path / "c.yml"
    path.write_text(text, encoding="utf-8")
    return load_file(path, "c.yml").hooks


def test_claude_codes_shape_and_the_short_form(tmp_path: Path) -> None:
    hooks = _load(tmp_path, CLAUDE_SHAPE)
    assert [(h.event, h.matcher, h.command, h.timeout) for h in hooks] == [
        ("PreToolUse", "Bash|shell", "./check.sh", 5.0),
        ("PreCompact", "manual", 'cp "$CLAUDE_PROJECT_DIR/x" /tmp', DEFAULT_TIMEOUT),
        ("UserPromptSubmit", None, "date", DEFAULT_TIMEOUT)]
    assert hooks[0].matches("shell") and not hooks[0].matches("shell_x")
    short = _load(tmp_path, "hooks:\n  SessionEnd:\n    - command: ./bye.sh\n"
                            "  PostToolUse:\n    - {matcher: '*', command: ./log.sh}\n")
    assert [(h.event, h.matcher, h.origin) for h in short] == [
        ("SessionEnd", None, "c.yml:3"), ("PostToolUse", None, "c.yml:5")]


@pytest.mark.parametrize(("text", "message"), [
    ("hooks:\n  SubagentStop:\n    - command: x\n",
     "c.yml:2: hooks.SubagentStop: unknown hook event; known keys: SessionStart, UserPromptSubmit"),
    ("hooks:\n  PreToolUse: ./x.sh\n",
     "c.yml:2: hooks.PreToolUse: must be a list of {matcher, hooks} entries (got './x.sh')"),
    ("hooks:\n  PreToolUse:\n    - matcher: '(unclosed'\n      command: x\n",
     "c.yml:3: hooks.PreToolUse[0].matcher: not a regular expression: missing ), unterminated"),
    ("hooks:\n  UserPromptSubmit:\n    - matcher: x\n      command: y\n",
     "hooks.UserPromptSubmit[0].matcher: UserPromptSubmit hooks have no matcher"),
    ("hooks:\n  PreToolUse:\n    - hooks: [{type: prompt, command: x}]\n",
     "hooks.PreToolUse[0].hooks[0].type: must be command (got 'prompt': rollchat runs "
     "commands only"),
    ("hooks:\n  PreToolUse:\n    - hooks: [{command: x, timeout: 0}]\n",
     "hooks.PreToolUse[0].hooks[0].timeout: must be a number of seconds > 0 (got 0)"),
    ("hooks:\n  PreToolUse:\n    - matcher: x\n",
     "c.yml:3: hooks.PreToolUse[0]: needs hooks: a list of {type: command, command, timeout}"),
    ("hooks:\n  PreToolUse:\n    - hooks: [{commnd: x}]\n",
     "hooks.PreToolUse[0].hooks[0].commnd: unknown key (did you mean 'command'?)"),
])
def test_each_mistake_is_named(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        _load(tmp_path, text)
    assert message in str(caught.value)


def test_an_untrusted_project_files_hooks_are_held_and_named(tmp_path: Path) -> None:
    (tmp_path / "rollchat.yml").write_text("hooks:\n  SessionStart:\n    - command: ./x.sh\n",
                                           encoding="utf-8")
    config = load_config(config_path=None, env={}, cwd=tmp_path,
                         user_config_dir=tmp_path / "user")
    assert len(config.hooks) == 1
    assert config.hooks_held == ("rollchat.yml is not trusted; run `rollchat trust` to run "
                                 "them")
    assert config.trust_notice is not None
    assert "so hooks was ignored" in config.trust_notice
    assert "run commands (hooks)" in config.trust_notice
    named = load_config(config_path=tmp_path / "rollchat.yml", env={}, cwd=tmp_path,
                        user_config_dir=tmp_path / "user")
    assert named.hooks_held is None and named.trust_notice is None
