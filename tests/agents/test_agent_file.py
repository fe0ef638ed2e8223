"""Agent files the way a developer meets them: `rollchat init-agent`, `rollchat agent.py`
(piped, with the offline model), the config's `agents: NAME: file:`, a file that fails to
load (one line naming the file and line, exit 2), and resuming with another agent file."""

from __future__ import annotations

from pathlib import Path

import pytest

from rollchat.storage.transcript import parse
from tests.e2e import run_piped, write_config


def sessions(tmp_path: Path) -> list[Path]:
    return sorted((tmp_path / "sessions").glob("*.md"))


def test_init_agent_writes_an_agent_that_runs_offline(tmp_path: Path) -> None:
    made = run_piped(tmp_path, "", "init-agent", "helper.py")
    assert made.returncode == 0, made.stderr
    assert "rollchat helper.py" in made.stdout
    source = (tmp_path / "helper.py").read_text()
    assert "def word_count(" in source and "approval = \"ask\"" in source
    done = run_piped(tmp_path, 'use word_count on "one two three"\n', "helper.py", "--yes")
    assert done.returncode == 0, done.stderr
    assert "helper · offline model" in done.stdout.lower()
    assert '→ tool word_count({"text": "one two three"})' in done.stdout
    assert "3 words" in done.stdout
    [session] = sessions(tmp_path)
    header = parse(session.read_text()).header
    assert header.agent == "Helper" and header.agent_path == str(tmp_path / "helper.py")
    [turn] = parse(session.read_text()).turns
    assert [(t.call.name, t.result) for t in turn.tools] == [("word_count", "3 words")]
    again = run_piped(tmp_path, "", "init-agent", "helper.py")
    assert again.returncode == 1
    assert again.stderr.strip() == "rollchat: error: helper.py already exists; not overwritten"


def test_offline_model_uses_a_tool_with_named_and_enum_arguments(tmp_path: Path) -> None:
    run_piped(tmp_path, "", "init-agent", "helper.py")
    done = run_piped(tmp_path, 'count the lines with word_count text="a" unit=lines\n',
                     "helper.py", "--yes")
    assert '→ tool word_count({"text": "a", "unit": "lines"})' in done.stdout
    assert "1 lines" in done.stdout


@pytest.mark.parametrize(("source", "line", "what"), [
    ("x = 1\ndef broken(:\n    pass\n", 2, "SyntaxError: invalid syntax"),
    ("import os\n\nraise RuntimeError('no config here')\n", 3,
     "RuntimeError: no config here"),
    ("def helper():\n    return 1 / 0\n\nvalue = helper()\n", 2,
     "ZeroDivisionError: division by zero"),
    ("import not_a_module_anywhere\n", 1, "ModuleNotFoundError: No module named"),
])
def test_a_file_that_fails_to_import_is_one_line_with_file_and_line(
        tmp_path: Path, source: str, line: int, what: str) -> None:
    (tmp_path / "bad.py").write_text(source)
    done = run_piped(tmp_path, "hello\n", "bad.py")
    assert done.returncode == 2
    assert done.stdout == ""
    [message] = done.stderr.splitlines()
    assert message.startswith(f"rollchat: error: bad.py:{line}: cannot load the agent file: ")
    assert what in message
    assert not (tmp_path / "sessions").exists()


@pytest.mark.parametrize(("source", "expected"), [
    ("approval = 'maybe'\n", "bad.py: approval: must be one of ask, auto, never (got 'maybe')"),
    ("allow = 'read_file'\n", "bad.py: allow: must be a list of tool names or globs"),
    ("def f(*names: str) -> str:\n    return ''\n",
     "bad.py:1: tool f: parameter 'names' must be a plain named parameter"),
    ("class Thing:\n    pass\n\ndef f(thing: Thing) -> str:\n    return ''\n",
     "bad.py:4: tool f: its parameter types cannot be described as JSON"),
    ("max_tool_rounds = 0\n", "bad.py: max_tool_rounds: must be a positive integer"),
])
def test_bad_settings_and_untypable_tools_are_named(tmp_path: Path, source: str,
                                                     expected: str) -> None:
    (tmp_path / "bad.py").write_text(source)
    done = run_piped(tmp_path, "", "bad.py")
    assert done.returncode == 2
    assert done.stderr.startswith(f"rollchat: error: {expected}"), done.stderr
    assert len(done.stderr.splitlines()) == 1


def test_a_missing_agent_file(tmp_path: Path) -> None:
    done = run_piped(tmp_path, "", "nowhere.py")
    assert done.returncode == 2
    assert done.stderr.strip() == "rollchat: error: nowhere.py: no such agent file"


def test_config_agent_file_with_config_keys_winning(tmp_path: Path) -> None:
    run_piped(tmp_path, "", "init-agent", "helper.py")
    cfg = write_config(tmp_path / "my.yml", "agents:\n  counter:\n    file: helper.py\n"
                       "    allow: [word_count]\n    max_tool_rounds: 4\n")
    done = run_piped(tmp_path, 'use word_count on "a b"\ntools\n', "--config", str(cfg))
    assert done.returncode == 0, done.stderr
    assert "2 words" in done.stdout  # allowed by the config's rule: no --yes needed
    assert "offered to the model (approval: ask; at most 4 rounds" in done.stdout
    assert "word_count" in done.stdout and "allowed by a rule" in done.stdout


def test_an_untrusted_project_file_cannot_load_code(tmp_path: Path) -> None:
    (tmp_path / "evil.py").write_text("open('ran', 'w').write('yes')\n")
    write_config(tmp_path / "rollchat.yml", "agents:\n  x:\n    file: evil.py\n"
                 "    approval: auto\n")
    done = run_piped(tmp_path, "hi\n")
    assert done.returncode == 0, done.stderr
    assert not (tmp_path / "ran").exists()
    assert "agents.x.file, agents.x.approval were ignored" in done.stdout + done.stderr


AGENT_A = "name = 'Alpha'\n\ndef ping(host: str) -> str:\n    '''Ping.'''\n    return 'pong'\n"


def test_resuming_with_another_agent_file_or_tool_set_asks_first(tmp_path: Path) -> None:
    (tmp_path / "alpha.py").write_text(AGENT_A)
    (tmp_path / "beta.py").write_text(AGENT_A.replace("Alpha", "Beta"))
    first = run_piped(tmp_path, "note the lighthouse\n", "alpha.py")
    assert first.returncode == 0, first.stderr
    other = run_piped(tmp_path, "resume 1\n", "beta.py")
    assert "was with agent 'Alpha'" in other.stdout + other.stderr
    assert "Refused without a terminal; pass --yes" in other.stdout + other.stderr
    assert "Resume cancelled." in other.stdout
    yes = run_piped(tmp_path, "resume 1\n", "beta.py", "--yes")
    assert "Restoring context" in yes.stdout
    # the same file with another tool set
    (tmp_path / "alpha.py").write_text(AGENT_A + "\ndef trace(host: str) -> str:\n"
                                       "    '''Trace.'''\n    return 'ok'\n")
    changed = run_piped(tmp_path, "resume alpha\n", "alpha.py")
    text = changed.stdout + changed.stderr
    assert "was with the tools ping; the agent now has ping, trace" in text
    assert "Resume cancelled." in changed.stdout


def test_agent_file_and_agent_flag_conflict(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("name = 'A'\n")
    done = run_piped(tmp_path, "", "a.py", "--agent", "assistant")
    assert done.returncode == 2
    assert "give --agent or an agent file, not both" in done.stderr

