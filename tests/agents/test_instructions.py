"""Project instructions read from real folders: the user's file, then the repository root down to
the working directory; ``@path`` includes as Claude Code reads them (relative to the including
file, depth-limited, each file once, not inside code, only inside the project or the home
directory); the size bound with its line; the ``instructions:`` settings checked."""

from __future__ import annotations

from pathlib import Path

import pytest

from rollchat.agents.instructions import HEADING, MAX_DEPTH, git_root, includes, load
from rollchat.config.file import load_file
from rollchat.config.settings import INSTRUCTION_FILES
from rollchat.errors import ConfigError

NAMES = INSTRUCTION_FILES


def _repo(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A repository with instructions at its root and in src/app, a user config directory with
    its own, and the home directory: (root, working directory, user dir)."""
    root = tmp_path / "home" / "work" / "repo"
    cwd = root / "src" / "app"
    cwd.mkdir(parents=True)
    (root / ".git").mkdir()
    (root / "AGENTS.md").write_text("Root: run make test.\n", encoding="utf-8")
    (root / "src" / "CLAUDE.md").write_text("Src: typed code.\n", encoding="utf-8")
    (cwd / "AGENTS.md").write_text("App: no globals.\n", encoding="utf-8")
    (cwd / "GEMINI.md").write_text("App gemini.\n", encoding="utf-8")
    user = tmp_path / "home" / ".config" / "rollchat"
    user.mkdir(parents=True)
    (user / "AGENTS.md").write_text("User: answer briefly.\n", encoding="utf-8")
    (tmp_path / "home" / "work" / "AGENTS.md").write_text("Above the repo.\n", encoding="utf-8")
    return root, cwd, user


def test_the_users_file_first_then_the_root_down_to_the_working_directory(
        tmp_path: Path) -> None:
    root, cwd, user = _repo(tmp_path)
    loaded = load(NAMES, cwd, user, 32_000, home=tmp_path / "home")
    assert [str(s.path) for s in loaded.sources] == [
        str(user / "AGENTS.md"), str(root / "AGENTS.md"), str(root / "src" / "CLAUDE.md"),
        str(cwd / "AGENTS.md"), str(cwd / "GEMINI.md")]
    text = loaded.text
    assert text.startswith(HEADING)
    order = ["User: answer", "Root: run", "Src: typed", "App: no globals", "App gemini"]
    assert [text.index(o) for o in order] == sorted(text.index(o) for o in order)
    assert "Above the repo" not in text  # above the repository root: not the project's
    assert "## ~/.config/rollchat/AGENTS.md" in text and "## src/app/AGENTS.md" in text
    assert git_root(cwd) == root and loaded.cut is None and loaded.problems == ()


def test_outside_a_repository_only_the_working_directory_counts(tmp_path: Path) -> None:
    (tmp_path / "AGENTS.md").write_text("Parent.\n", encoding="utf-8")
    cwd = tmp_path / "here"
    cwd.mkdir()
    (cwd / "CLAUDE.md").write_text("Here.\n", encoding="utf-8")
    loaded = load(("AGENTS.md", "CLAUDE.md"), cwd, None, 32_000, home=tmp_path)
    assert [s.path.name for s in loaded.sources] == ["CLAUDE.md"] and "Parent" not in loaded.text


def test_includes_follow_the_including_file_once_each_and_not_inside_code(
        tmp_path: Path) -> None:
    root, cwd, _ = _repo(tmp_path)
    (root / "docs").mkdir()
    (root / "AGENTS.md").write_text(
        "Root.\nSee @docs/style.md and @docs/missing.md, mail me@example.com.\n"
        "`@docs/code.md` is code\n```\n@docs/fenced.md\n```\n", encoding="utf-8")
    (root / "docs" / "style.md").write_text("Style.\n@../AGENTS.md @./more.md\n",
                                            encoding="utf-8")
    (root / "docs" / "more.md").write_text("More.\n", encoding="utf-8")
    for name in ("code.md", "fenced.md"):
        (root / "docs" / name).write_text("NOT INCLUDED\n", encoding="utf-8")
    (cwd / "AGENTS.md").write_text("App. @~/notes.md\n", encoding="utf-8")
    (tmp_path / "home" / "notes.md").write_text("Home notes.\n", encoding="utf-8")
    loaded = load(("AGENTS.md",), cwd, None, 32_000, home=tmp_path / "home")
    assert [(s.path.name, s.included_from and s.included_from.name)
            for s in loaded.sources] == [("AGENTS.md", None), ("style.md", "AGENTS.md"),
                                         ("more.md", "style.md"), ("AGENTS.md", None)]
    assert "Home notes" not in loaded.text  # a project's file: includes stay in the project
    assert "NOT INCLUDED" not in loaded.text and loaded.text.count("Root.") == 1
    assert "## docs/more.md (included by docs/style.md)" in loaded.text
    assert "@docs/missing.md" in loaded.text  # a missing file stays as text


def test_includes_stop_at_the_depth_limit_and_never_leave_the_project(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    for i in range(MAX_DEPTH + 2):
        (root / f"f{i}.md").write_text(f"level {i}\n@f{i + 1}.md\n", encoding="utf-8")
    (root / "AGENTS.md").write_text("top\n@f0.md\n@/etc/hostname\n@../secret.md\n",
                                    encoding="utf-8")
    (tmp_path / "secret.md").write_text("SECRET\n", encoding="utf-8")
    loaded = load(("AGENTS.md",), root, None, 32_000, home=tmp_path / "nohome")
    levels = [s.path.name for s in loaded.sources]
    assert levels == ["AGENTS.md", *(f"f{i}.md" for i in range(MAX_DEPTH))]
    assert "SECRET" not in loaded.text
    assert any("secret.md is outside the project" in p for p in loaded.problems)


def test_a_file_linked_out_of_the_project_is_not_read(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    (tmp_path / "id_rsa").write_text("PRIVATE KEY\n", encoding="utf-8")
    (root / "AGENTS.md").symlink_to(tmp_path / "id_rsa")  # a cloned repository's trick
    (root / "CLAUDE.md").write_text("Fine.\n", encoding="utf-8")
    loaded = load(NAMES, root, None, 32_000, home=tmp_path / "nohome")
    assert "PRIVATE KEY" not in loaded.text and "Fine." in loaded.text
    assert loaded.problems == (f"{root / 'AGENTS.md'} is outside the project; not read",)


def test_a_projects_file_cannot_include_from_the_home_directory_the_users_can(
        tmp_path: Path) -> None:
    home = tmp_path / "home"
    root, cwd, user = _repo(tmp_path)
    (home / ".ssh").mkdir()
    (home / ".ssh" / "id_rsa").write_text("PRIVATE KEY\n", encoding="utf-8")
    (home / "style.md").write_text("My style.\n", encoding="utf-8")
    (root / "AGENTS.md").write_text("Root.\n@~/.ssh/id_rsa\n", encoding="utf-8")
    (user / "AGENTS.md").write_text("Mine.\n@~/style.md\n", encoding="utf-8")
    loaded = load(NAMES, cwd, user, 32_000, home=home)
    assert "PRIVATE KEY" not in loaded.text and "My style." in loaded.text
    assert loaded.problems == (f"{home / '.ssh' / 'id_rsa'} is outside the project; not read",)


def test_a_huge_file_is_cut_at_the_bound(tmp_path: Path) -> None:
    (tmp_path / "AGENTS.md").write_bytes(b"rule\n" * 2_000_000)  # 10 MB
    loaded = load(("AGENTS.md",), tmp_path, None, 2048, home=tmp_path / "nohome")
    assert loaded.cut is not None and len(loaded.text.encode()) < 2048 + 200


def test_too_much_is_cut_with_a_line_naming_what_was_left_out(tmp_path: Path) -> None:
    root, cwd, user = _repo(tmp_path)
    (root / "AGENTS.md").write_text("".join(f"rule {i}\n" for i in range(400)),
                                    encoding="utf-8")
    loaded = load(NAMES, cwd, user, 1024, home=tmp_path / "home")
    assert len(loaded.text.encode()) <= 1024 + len((loaded.cut or "").encode()) + 2
    assert loaded.cut is not None and loaded.text.endswith(loaded.cut)
    assert ("the rest of AGENTS.md and src/CLAUDE.md, src/app/AGENTS.md, src/app/GEMINI.md "
            "left out") in loaded.cut
    assert "rule 0\n" in loaded.text and "rule 399" not in loaded.text
    assert "App: no globals" not in loaded.text


def test_includes_are_read_outside_code_only() -> None:
    base, home = Path("/p"), Path("/home/u")
    assert includes("a @x.md\n`@y.md`\n~~~\n@z.md\n~~~\n@~/h.md, @/abs.md.", base,
                    home) == [base / "x.md", home / "h.md", Path("/abs.md")]


def test_the_settings_are_checked(tmp_path: Path) -> None:
    good = tmp_path / "good.yml"
    good.write_text("instructions:\n  files: [AGENTS.md, TEAM.md]\n  max_bytes: 4096\n",
                    encoding="utf-8")
    config = load_file(good, "good.yml")
    assert config.instructions.files == ("AGENTS.md", "TEAM.md")
    assert config.instructions.max_bytes == 4096 and config.instructions.enabled
    bad = tmp_path / "bad.yml"
    bad.write_text("instructions:\n  max_bytes: 10\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"bad.yml:2: instructions.max_bytes: must be an "
                                          r"integer >= 1024 \(bytes\) \(got 10\)"):
        load_file(bad, "bad.yml")


def test_the_instructions_command_lists_files_cuts_and_refusals(tmp_path: Path) -> None:
    from rollchat.session.instructed import listing

    root, cwd, user = _repo(tmp_path)
    (root / "AGENTS.md").write_text("Root.\n@../../outside.md\n" + "x" * 3000 + "\n",
                                    encoding="utf-8")
    (tmp_path / "home" / "outside.md").write_text("Out.\n", encoding="utf-8")
    loaded = load(NAMES, cwd, user, 2048, home=tmp_path / "home")
    lines = listing(loaded, cwd, tmp_path / "home")
    assert lines[0].startswith("Project instructions in the system prompt (2 files, ")
    assert lines[1].startswith("  ~/.config/rollchat/AGENTS.md  ")
    assert lines[2].startswith("  AGENTS.md  ")  # named from the repository root
    assert lines[3] == loaded.cut and lines[3] is not None
    outside = root / "../../outside.md"
    assert lines[4] == f"  {outside} is outside the project; not read"
    assert listing(None, cwd, tmp_path)[0].startswith("No project instructions loaded")
