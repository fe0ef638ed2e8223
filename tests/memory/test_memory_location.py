"""Where memory lives, as a user meets it (issue 25.6): by default in the user data directory,
so that ``rollchat memory`` in another directory finds what a chat remembered; an existing
project's ``sessions/memory`` is still found there (a search order, no migration); the
config's ``memory.dir`` wins; ``rollchat memory`` and the in-chat ``memory`` say where."""

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
    assert f"Memory lives in {where} (the user data directory" in chat.stdout  # in the chat
    listed = run_piped(other, "", "memory", env=_env(tmp_path))
    assert listed.returncode == 0, listed.stderr
    assert "I prefer tabs over spaces" in listed.stdout
    assert f"Memory lives in {where}" in listed.stdout
    as_json = json.loads(run_piped(other, "", "memory", "--json", env=_env(tmp_path)).stdout)
    assert as_json["dir"] == str(where) and len(as_json["facts"]) == 1
    assert not (one / "sessions" / "memory").exists()


def test_an_existing_projects_memory_is_still_found_and_kept_there(tmp_path: Path) -> None:
    project = tmp_path / "project"
    # what rollchat wrote before: the facts under the project's sessions directory
    MemoryStore(project / "sessions", "assistant").add("deploys go through staging first",
                                                       "project")
    listed = run_piped(project, "", "memory", env=_env(tmp_path))
    assert "deploys go through staging first" in listed.stdout
    assert (f"Memory lives in {project / 'sessions' / 'memory'} (this project's sessions "
            "directory") in listed.stdout
    run_piped(project, "remember the staging database is pg-stage-2\n", "--trust-input",
              env=_env(tmp_path))
    kept = MemoryStore(project / "sessions", "assistant").facts()
    assert [f.text for f in kept] == ["deploys go through staging first",
                                      "the staging database is pg-stage-2"]
    elsewhere = run_piped(tmp_path, "", "memory", env=_env(tmp_path))
    assert "No facts remembered yet" in elsewhere.stdout  # a project's memory stays its own


def test_memory_dir_in_the_config_is_where_memory_lives(tmp_path: Path) -> None:
    cfg = write_config(tmp_path / "rollchat.yml", "memory:\n  dir: team-memory\n")
    run_piped(tmp_path, "remember I prefer short answers\n", "--trust-input", "--config", str(cfg),
              env=_env(tmp_path))
    listed = run_piped(tmp_path, "", "memory", "--config", str(cfg), env=_env(tmp_path))
    assert "I prefer short answers" in listed.stdout
    assert f"Memory lives in {tmp_path / 'team-memory'} (set by memory.dir" in listed.stdout
    assert list((tmp_path / "team-memory").glob("assistant.facts.jsonl"))
