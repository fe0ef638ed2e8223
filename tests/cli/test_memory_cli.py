"""``rollchat memory``: list (and --json), forget, episodes, prune and edit, through the real
command line (typer's CliRunner; the editor is a script), and the memory: config section."""

from __future__ import annotations

import json
import os
import stat
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rollchat.cli.app import build_cli
from rollchat.memory.store import MemoryStore

runner = CliRunner()


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "rollchat.yml").write_text("memory:\n  user_dir: user\n")
    from rollchat.config.load import trust_file

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    from rollchat.config.settings import default_user_config_dir

    trust_file(tmp_path / "rollchat.yml", cwd=tmp_path, user_config_dir=default_user_config_dir())
    return tmp_path


def store(root: Path) -> MemoryStore:
    """The project's store as rollchat run in ``root`` opens it (memory/keeper.opened)."""
    from rollchat.memory.location import memory_home, project_key

    home = memory_home()
    return MemoryStore(root / "sessions", "assistant", user_dir=root / "user",
                       directory=home / "projects" / project_key(root.resolve()), home=home)


def run(*args: str, input: str | None = None) -> tuple[int, str, str]:
    result = runner.invoke(build_cli(), list(args), input=input)
    return result.exit_code, result.stdout, result.stderr


def test_list_plain_and_json(project: Path) -> None:
    s = store(project)
    s.add("prefers tabs over spaces", "preference", confidence=0.9,
          source_session="assistant_20260101_120000_abcd", source_turn=2)
    s.add("the API listens on 8443", "project")
    s.add("gone", "project")
    s.forget(3)
    code, out, _ = run("memory")
    assert code == 0
    assert "1  prefers tabs over spaces  preference · this project · session " \
           "assistant_20260101_120000_abcd turn 2" in out
    assert "2  the API listens on 8443  project · this project · added by hand" in out
    assert "gone" not in out
    code, out, _ = run("memory", "--json")
    assert code == 0
    facts = json.loads(out)["facts"]
    assert [(f["id"], f["text"], f["category"], f["source"]) for f in facts] == [
        (1, "prefers tabs over spaces", "preference",
         {"session": "assistant_20260101_120000_abcd", "turn": 2}),
        (2, "the API listens on 8443", "project", {"session": None, "turn": None})]
    assert facts[0]["confidence"] == 0.9 and facts[0]["scope"] == "project"


def test_list_reports_a_damaged_line_and_goes_on(project: Path) -> None:
    s = store(project)
    s.add("kept fact", "project")
    with s.facts_path.open("a") as f:
        f.write("{oops\n")
    code, out, err = run("memory", "--json")
    assert code == 0 and [f["text"] for f in json.loads(out)["facts"]] == ["kept fact"]
    assert f"{s.facts_path} line 2: not JSON" in err
    assert "{oops" in s.facts_path.read_text()


def test_forget(project: Path) -> None:
    store(project).add("my editor is vim", "preference")
    code, out, _ = run("memory", "forget", "1")
    assert code == 0 and "Forgot 1: my editor is vim" in out
    assert store(project).facts() == []
    code, _, err = run("memory", "forget", "1")
    assert code == 1 and "fact 1 is already forgotten" in err
    code, _, err = run("memory", "forget", "42")
    assert code == 1 and "there is no fact 42" in err
    code, _, err = run("memory", "forget", "x")
    assert code == 2 and "x" in err


def test_episodes(project: Path) -> None:
    code, out, _ = run("memory", "episodes")
    assert code == 0 and "No episodes yet" in out
    store(project).add_episode("assistant_20260101_120000_abcd", "**Topics Discussed:**\n- jwt",
                               span="2026-01-01 12:00 – 12:30")
    code, out, _ = run("memory", "episodes", "--json")
    assert code == 0
    assert json.loads(out)["episodes"] == [{
        "session_id": "assistant_20260101_120000_abcd", "title": None,
        "summary": "**Topics Discussed:**\n- jwt", "span": "2026-01-01 12:00 – 12:30",
        "created": store(project).episodes()[0].created.isoformat()}]
    code, out, _ = run("memory", "episodes")
    assert "assistant_20260101_120000_abcd · 2026-01-01 12:00 – 12:30" in out and "- jwt" in out


def _age(root: Path, fact_id: int, days: int) -> None:
    """Make a fact look ``days`` old and never used (as a file from long ago would be)."""
    path = store(root).facts_path
    lines = []
    for line in path.read_text().splitlines():
        record = json.loads(line)
        if record["id"] == fact_id:
            record["created"] = (datetime.now(timezone.utc) - timedelta(days=days)).isoformat()
        lines.append(json.dumps(record))
    path.write_text("\n".join(lines) + "\n")
    store(root).accept([fact_id])  # (an edit by hand is not rollchat's until accepted)


def test_prune_lists_then_removes_only_when_asked(project: Path) -> None:
    s = store(project)
    s.add("old fact", "project")
    s.add("fresh fact", "project")
    _age(project, 1, 100)
    code, _, err = run("memory", "prune", "--dry-run")
    assert code == 2 and "memory.max_age_days is not set" in err
    (project / "rollchat.yml").write_text("memory:\n  user_dir: user\n  max_age_days: 30\n")
    code, out, _ = run("--config", "rollchat.yml", "memory", "prune", "--dry-run")
    assert code == 0 and "old fact" in out and "fresh fact" not in out
    assert "1 to prune; nothing changed (--dry-run)" in out
    assert len(store(project).facts()) == 2
    code, _, err = run("--config", "rollchat.yml", "memory", "prune")  # no terminal, no --yes
    assert code == 1 and "pass --yes" in err and len(store(project).facts()) == 2
    code, out, _ = run("--config", "rollchat.yml", "memory", "prune", "--yes")
    assert code == 0 and "Forgot 1 facts." in out
    assert [f.text for f in store(project).facts()] == ["fresh fact"]
    assert store(project).add("old fact", "project") is None  # pruned means forgotten
    code, out, _ = run("memory", "prune", "--days", "5", "--dry-run")
    assert code == 0 and "No fact has gone unused for 5 days" in out


def _editor(tmp_path: Path, script: str) -> str:
    """An $EDITOR that runs ``script`` (Python, with ``path`` the file) on the file."""
    path = tmp_path / "editor.py"
    path.write_text("import sys, json, pathlib\npath = pathlib.Path(sys.argv[1])\n" + script)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return f"{sys.executable} {path}"


def test_edit_changes_a_fact_and_a_deleted_line_is_forgotten(project: Path,
                                                              monkeypatch: pytest.MonkeyPatch
                                                              ) -> None:
    s = store(project)
    s.add("prefers tabs", "preference")
    s.add("uses zsh", "background")
    monkeypatch.setenv("EDITOR", _editor(project, (
        "lines = path.read_text().splitlines()\n"
        "first = json.loads(lines[0]); first['text'] = 'prefers tabs, width 4'\n"
        "path.write_text(json.dumps(first) + '\\n')\n")))
    monkeypatch.delenv("VISUAL", raising=False)
    code, out, err = run("memory", "edit")
    assert code == 0, err
    assert "1 deleted fact(s) forgotten" in out
    assert [f.text for f in store(project).facts()] == ["prefers tabs, width 4"]
    assert store(project).add("uses zsh", "background") is None


def test_edit_refuses_a_bad_file_and_offers_to_edit_again_or_discard(
        project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    s = store(project)
    s.add("prefers tabs", "preference")
    before = s.facts_path.read_bytes()
    monkeypatch.delenv("VISUAL", raising=False)
    monkeypatch.setenv("EDITOR", _editor(project, (
        "path.write_text(path.read_text().replace('preference', 'hobby') + 'nonsense\\n')\n")))
    code, out, err = run("memory", "edit", input="d\n")
    assert code == 1
    assert "line 1: \"category\" must be one of preference" in err
    assert "line 2: not JSON" in err and "Discarded: the file is unchanged." in out
    assert s.facts_path.read_bytes() == before
    # a second round fixes it: the editor gets the bad text back, and saves a good one
    monkeypatch.setenv("EDITOR", _editor(project, (
        "text = path.read_text()\n"
        "if 'nonsense' in text:\n"
        "    path.write_text(text.replace('nonsense\\n', '').replace('hobby', 'background'))\n"
        "else:\n"
        "    path.write_text(text.replace('preference', 'hobby') + 'nonsense\\n')\n")))
    code, out, err = run("memory", "edit", input="e\n")
    assert code == 0, err
    assert "problem" in err and "Saved" in out
    assert [f.category for f in store(project).facts()] == ["background"]


def test_edit_keeps_what_another_process_wrote_meanwhile(project: Path,
                                                         monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    s = store(project)
    s.add("prefers tabs", "preference")
    s.add("uses zsh", "background")
    # while the editor is open, another process adds a fact and marks one used
    monkeypatch.setenv("EDITOR", _editor(project, (
        f"sys.path.insert(0, {str(Path(__file__).resolve().parents[2] / 'src')!r})\n"
        "from rollchat.memory.store import MemoryStore\n"
        f"other = MemoryStore(pathlib.Path({str(project / 'sessions')!r}), 'assistant', "
        f"directory=pathlib.Path({str(store(project).dir)!r}), "
        f"home=pathlib.Path({str(store(project).home)!r}))\n"
        "other.add('deploys on Fridays', 'decision')\n"
        "other.mark_used([2])\n"
        "path.write_text(path.read_text().replace('prefers tabs', 'prefers spaces'))\n")))
    monkeypatch.delenv("VISUAL", raising=False)
    code, out, err = run("memory", "edit")
    assert code == 0, err
    assert "1 fact(s) added meanwhile kept" in out
    facts = store(project).facts()
    assert [f.text for f in facts] == ["prefers spaces", "uses zsh", "deploys on Fridays"]
    assert facts[1].last_used is not None


def test_edit_with_a_failing_editor_changes_nothing(project: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    store(project).add("prefers tabs", "preference")
    monkeypatch.delenv("VISUAL", raising=False)
    monkeypatch.setenv("EDITOR", _editor(project, "sys.exit(3)\n"))
    code, _, err = run("memory", "edit")
    assert code == 1 and "exited with status 3: nothing changed" in err
    assert [f.text for f in store(project).facts()] == ["prefers tabs"]
    assert not [p for p in store(project).dir.iterdir()
                if "edit" in p.name]  # the temporary copy is gone


@pytest.mark.parametrize(("text", "message"), [
    ("memory:\n  scope: team\n", "memory.scope: must be project or user"),
    ("memory:\n  idle_seconds: -1\n", "memory.idle_seconds: must be a number of seconds >= 0"),
    ("memory:\n  extract_timeout_seconds: -2\n",
     "memory.extract_timeout_seconds: must be a number of seconds >= 0"),
    ("memory:\n  max_age_days: 0\n", "memory.max_age_days: must be a positive number of days"),
    ("memory:\n  max_share: 0.9\n", "memory.max_share: must be a number between 0 and 0.5"),
    ("memory:\n  enabled: maybe\n", "memory.enabled: must be true or false"),
    ("memory:\n  idle: 3\n", "memory.idle: unknown key; known keys: enabled, scope"),
])
def test_bad_memory_settings_exit_2_naming_the_key(project: Path, text: str,
                                                   message: str) -> None:
    (project / "bad.yml").write_text(text)
    code, _, err = run("memory", "--config", "bad.yml")
    assert code == 2 and f"bad.yml:2: {message}" in err


def test_memory_off_in_the_chat(project: Path) -> None:
    from tests.e2e import clean_env, run_piped

    (project / "rollchat.yml").write_text("memory:\n  enabled: false\n")
    env = clean_env(project / "home")
    result = run_piped(project, "remember prefers tabs\nI prefer tabs.\nexit\n", "--config",
                       "rollchat.yml", env=env)
    assert result.returncode == 0
    assert "memory is off" in result.stdout and "Remembered" not in result.stdout
    assert not store(project).dir.exists()
    assert os.listdir(project / "sessions")  # the session itself was saved
