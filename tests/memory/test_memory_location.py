"""Where memory lives, as a user meets it (issues 25.6, 35.2): in the user data directory, so
that ``rollchat memory`` in another directory finds the preferences a chat remembered; a
project's ``sessions/memory`` is never read (issue 33.2: only named, for ``memory import``);
the config's ``memory.dir`` wins; ``rollchat memory`` and the in-chat ``memory`` say where."""

from __future__ import annotations

import json
from pathlib import Path

from rollchat.memory.store import MemoryStore
from tests.e2e import clean_env, run_piped, user_memory, write_config


def _env(root: Path) -> dict[str, str]:
    return clean_env(root / "home")  # one user for every directory of the test


def test_a_fact_remembered_in_one_directory_is_listed_from_another(tmp_path: Path) -> None:
    one, other = tmp_path / "one", tmp_path / "other"
    one.mkdir(), other.mkdir()
    chat = run_piped(one, "remember I prefer tabs over spaces\nmemory\n", "--trust-input",
                     env=_env(tmp_path))
    assert "Remembered: I prefer tabs over spaces" in chat.stdout, chat.stdout
    where = user_memory(tmp_path / "home")
    told = " ".join(chat.stdout.split())
    assert f"Memory of {one.resolve()} lives in {where}/projects/one-" in told  # in the chat
    listed = run_piped(other, "", "memory", env=_env(tmp_path))
    assert listed.returncode == 0, listed.stderr
    assert "I prefer tabs over spaces" in listed.stdout
    assert f"the facts that hold everywhere in {where}" in " ".join(listed.stdout.split())
    as_json = json.loads(run_piped(other, "", "memory", "--json", env=_env(tmp_path)).stdout)
    assert as_json["user_file"] == str(where / "user.facts.jsonl")
    assert len(as_json["facts"]) == 1
    assert not (one / "sessions" / "memory").exists()


def test_a_projects_old_sessions_memory_is_named_not_read(tmp_path: Path) -> None:
    project = tmp_path / "project"
    # what rollchat wrote before (or a repository ships): facts under the sessions directory
    MemoryStore(project / "sessions", "assistant").add("deploys go through staging first",
                                                       "project")
    listed = run_piped(project, "", "memory", env=_env(tmp_path))
    assert "deploys go through staging first" not in listed.stdout
    assert (f"memory: {(project / 'sessions' / 'memory').resolve()} holds memory files, not "
            "read") in " ".join(listed.stdout.split())
    run_piped(project, "", "memory", "import", "sessions/memory", "--yes", env=_env(tmp_path))
    listed = run_piped(project, "", "memory", env=_env(tmp_path))
    assert "deploys go through staging first" in listed.stdout
    elsewhere = run_piped(tmp_path, "", "memory", env=_env(tmp_path))
    assert "No facts remembered yet" in elsewhere.stdout  # a project's memory stays its own


def test_memory_dir_in_the_config_is_where_memory_lives(tmp_path: Path) -> None:
    cfg = write_config(tmp_path / "rollchat.yml", "memory:\n  dir: team-memory\n")
    run_piped(tmp_path, "remember we decided on short answers\n", "--trust-input", "--config",
              str(cfg), env=_env(tmp_path))
    listed = run_piped(tmp_path, "", "memory", "--config", str(cfg), env=_env(tmp_path))
    assert "we decided on short answers" in listed.stdout
    assert f"lives in {tmp_path / 'team-memory'} (set by memory.dir" in listed.stdout
    assert list((tmp_path / "team-memory").glob("assistant.facts.jsonl"))
