"""Secrets stored before the secret filter (or written into the file by hand) are found and can
be cleaned up: ``rollchat memory`` (and ``memory`` in the chat) names them in one warning,
``rollchat memory prune --secrets`` removes their lines (a forgotten fact keeps its text, so
forgetting is not enough), and ``rollchat memory edit`` refuses to save one, offering to edit
again or discard, as for any other problem."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rollchat.memory.store import MemoryStore
from tests.cli.test_memory_cli import _editor, project, run, store
from tests.memory.test_memory_chat import make_chat

__all__ = ["project"]

PASSWORD = "the staging password is hunter22"
TOKEN = "deploys with ghp_abcdefghijklmnopqrstuvwxyz0123"


def plant(s: MemoryStore, text: str) -> int:
    """A fact kept before secrets were refused: written into the file as it was then."""
    fact = s.add(f"placeholder {len(s.facts()) + len(s.forgotten())}", "project")
    assert fact is not None
    lines = s.facts_path.read_text(encoding="utf-8").splitlines()
    record = json.loads(lines[-1])
    record["text"] = text
    lines[-1] = json.dumps(record)
    s.facts_path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return fact.id


def test_listing_names_facts_that_look_like_secrets(project: Path) -> None:
    s = store(project)
    s.add("prefers tabs over spaces", "preference")
    plant(s, PASSWORD)
    code, out, _ = run("memory")
    assert code == 0 and PASSWORD in out
    warning = " ".join(out.split())
    assert ("1 fact looks like it holds a secret (2: a password), and facts are sent to the "
            "model in later requests: 'rollchat memory prune --secrets' removes them from "
            "the file") in warning
    code, out, err = run("memory", "--json")
    assert code == 0 and len(json.loads(out)["facts"]) == 2
    assert "(2: a password)" in " ".join(err.split())
    chat = make_chat(project, facts=store(project))  # the same store, from the chat's `memory`
    assert "1 fact looks like it holds a secret (2: a password)" in " ".join(
        chat.type("memory").split())


def test_a_listing_without_secrets_has_no_warning(project: Path) -> None:
    store(project).add("prefers tabs over spaces", "preference")
    code, out, _ = run("memory")
    out = out.replace(str(project), "PROJECT")  # (the test's name is in its directory's)
    assert code == 0 and "look like a secret" not in out and "Warning" not in out


def test_prune_secrets_removes_their_lines_forgotten_ones_too(project: Path) -> None:
    s = store(project)
    s.add("prefers tabs over spaces", "preference")
    plant(s, PASSWORD)
    forgotten = plant(s, TOKEN)
    s.forget(forgotten)  # forgotten, but its line still holds the token
    assert "ghp_" in s.facts_path.read_text(encoding="utf-8")
    code, out, _ = run("memory", "prune", "--secrets", "--dry-run")
    assert code == 0 and "hunter22" in out and "ghp_" in out
    assert "(a GitHub token, forgotten)" in out and "2 to remove; nothing changed" in out
    code, _, err = run("memory", "prune", "--secrets")  # no terminal, no --yes
    assert code == 1 and "pass --yes" in err
    assert "hunter22" in s.facts_path.read_text(encoding="utf-8")
    code, out, _ = run("memory", "prune", "--secrets", "--yes")
    assert code == 0 and "Removed 2 facts from the file." in out
    text = s.facts_path.read_text(encoding="utf-8")
    assert "hunter22" not in text and "ghp_" not in text
    assert [f.text for f in store(project).facts()] == ["prefers tabs over spaces"]
    code, out, _ = run("memory")
    assert "like a secret" not in out
    code, out, _ = run("memory", "prune", "--secrets")
    assert code == 0 and "No fact looks like a secret." in out


def test_edit_refuses_a_secret_and_offers_to_edit_again_or_discard(
        project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    s = store(project)
    s.add("prefers tabs", "preference")
    before = s.facts_path.read_bytes()
    monkeypatch.delenv("VISUAL", raising=False)
    add_key = ("record = json.loads(path.read_text().splitlines()[0])\n"
               "record.update(id=2, text='the OpenAI API key is sk-abcdefghijklmnopqrstuvwx')\n"
               "path.write_text(path.read_text() + json.dumps(record) + '\\n')\n")
    monkeypatch.setenv("EDITOR", _editor(project, add_key))
    code, out, err = run("memory", "edit", input="d\n")
    assert code == 1
    assert "line 2: fact 2 looks like it holds an API key" in " ".join(err.split())
    assert "Edit again (e) or discard your changes (d)?" in err
    assert "Discarded: the file is unchanged." in out
    assert s.facts_path.read_bytes() == before
    # edit again: the second round takes the key out, and it saves
    monkeypatch.setenv("EDITOR", _editor(project, (
        "text = path.read_text()\n"
        "if 'sk-' in text:\n"
        "    path.write_text(text.replace('is sk-abcdefghijklmnopqrstuvwx', 'is in .env'))\n"
        "else:\n" + "".join("    " + line + "\n" for line in add_key.splitlines()))))
    code, out, err = run("memory", "edit", input="e\n")
    assert code == 0, err
    assert "Saved" in out
    assert [f.text for f in store(project).facts()] == [
        "prefers tabs", "the OpenAI API key is in .env"]


def test_deleting_a_secret_in_the_editor_removes_its_line(
        project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    s = store(project)
    s.add("prefers tabs", "preference")
    plant(s, PASSWORD)
    monkeypatch.delenv("VISUAL", raising=False)
    monkeypatch.setenv("EDITOR", _editor(project, (
        "path.write_text(path.read_text().splitlines()[0] + '\\n')\n")))
    code, out, err = run("memory", "edit")
    assert code == 0, err
    assert "1 deleted fact(s) holding a secret removed" in out
    assert "hunter22" not in s.facts_path.read_text(encoding="utf-8")
    assert [f.text for f in store(project).facts()] == ["prefers tabs"]


# ---------------------------------------------------------------- copies left beside the files


def _holding(folder: Path, text: str) -> list[str]:
    """The files in ``folder`` (and below) that hold ``text``."""
    return sorted(p.name for p in folder.rglob("*") if p.is_file()
                  and text.encode() in p.read_bytes())


def test_an_editor_backup_of_the_edit_copy_is_removed_with_it(
        project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 24, point 9: an editor that keeps a backup (``copy~``, as Emacs and vim with
    'backup' do) of the copy being edited: the secret the user deletes is in no file after."""
    s = store(project)
    s.add("prefers tabs over spaces", "preference")
    plant(s, PASSWORD)
    monkeypatch.setenv("EDITOR", _editor(project, (
        "import shutil\n"
        "shutil.copy(path, str(path) + '~')\n"  # the editor's backup: the text as it was
        "lines = [l for l in path.read_text().splitlines() if 'hunter22' not in l]\n"
        "path.write_text('\\n'.join(lines) + '\\n')\n")))
    code, _, err = run("memory", "edit")
    assert code == 0, err
    assert _holding(project / "sessions", "hunter22") == []
    assert [f.text for f in s.facts()] == ["prefers tabs over spaces"]


def _dead_pid() -> int:
    import subprocess
    import sys

    done = subprocess.Popen([sys.executable, "-c", "pass"])
    done.wait()
    return done.pid


def test_copies_a_killed_edit_or_rewrite_left_are_removed_on_the_next_start(
        project: Path) -> None:
    """``rollchat memory edit`` killed while the editor is open (SIGKILL, from the editor)
    leaves the copy, every fact in it; a rewrite killed before its rename leaves its
    temporary file. The next start of rollchat removes them; a copy of a process still
    running is left alone."""
    import os
    import subprocess
    import sys

    from tests.e2e import clean_env

    s = store(project)
    plant(s, PASSWORD)
    env = clean_env(project / "home", XDG_CONFIG_HOME=str(project / "config"),
                    XDG_DATA_HOME=str(project / "data"),
                    EDITOR=_editor(project, "import os, signal\n"
                                            "os.kill(os.getppid(), signal.SIGKILL)\n"))
    killed = subprocess.run([sys.executable, "-m", "rollchat", "memory", "edit"], cwd=project,
                            env=env, capture_output=True, text=True, timeout=60)
    assert killed.returncode == -9, killed.stderr
    memory = store(project).dir
    [copy] = [p for p in memory.iterdir() if "-edit-" in p.name]
    assert "hunter22" in copy.read_text()  # what a kill leaves
    rewrite = memory / f".assistant.facts.jsonl.tmp-{_dead_pid()}-0a1b2c3d"
    rewrite.write_text(s.facts_path.read_text())  # (storage.session_file's name for it)
    running = memory / f".assistant.facts-edit-{os.getpid()}-x1y2z3.jsonl"
    running.write_text("{}\n")
    assert s.drop_secrets()  # the user removes the secret from the file itself
    code, _, err = run("memory")
    assert code == 0, err
    assert not copy.exists() and not rewrite.exists() and running.exists()
    assert _holding(project / "sessions", "hunter22") == []
