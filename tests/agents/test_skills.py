"""Skills (Agent Skills convention): listed in the system prompt, loaded on demand with the
read-only load_skill tool; a broken skill stops rollchat with the file named."""

from __future__ import annotations

from pathlib import Path

from tests.e2e import clean_env, run_piped
from tests.wire_servers import WireServer, openai_server, text, tool

__all__ = ["openai_server"]  # the fixture, imported for pytest

AGENT = "name = 'Skilled'\nskills = 'skills'\napproval = 'never'\n"


def make_skill(root: Path, folder: str, front: str, body: str = "Do it well.") -> None:
    (root / "skills" / folder).mkdir(parents=True, exist_ok=True)
    (root / "skills" / folder / "SKILL.md").write_text(f"---\n{front}\n---\n{body}\n")


def test_skills_are_listed_and_loaded_on_demand(openai_server: WireServer,
                                                tmp_path: Path) -> None:
    (tmp_path / "skilled.py").write_text(AGENT)
    make_skill(tmp_path, "pdf", "name: pdf-forms\ndescription: Fill in PDF forms.",
               "Step one: open the form.")
    make_skill(tmp_path, "a-release", "name: release\ndescription: >\n  Cut a release\n  "
               "of the project.")
    (tmp_path / "skills" / "pdf" / "fields.md").write_text("names")
    openai_server.push(tool("load_skill", {"name": "pdf-forms"}, tool_id="s1"),
                       text("I know how now."), text("again"))
    env = clean_env(tmp_path / "home", OPENAI_API_KEY="test")
    done = run_piped(tmp_path, "fill my form\nand again\n", "skilled.py", "--provider",
                     "openai", "--model", "m", "--base-url", openai_server.url, env=env)
    assert done.returncode == 0, done.stderr
    first, second, third = openai_server.bodies[:3]
    system = first["messages"][0]["content"]
    assert system.endswith("<available_skills>\n- pdf-forms: Fill in PDF forms.\n"
                           "- release: Cut a release of the project.\n</available_skills>")
    assert third["messages"][0]["content"] == system  # the prefix is stable
    assert [t["function"]["name"] for t in first["tools"]] == ["load_skill",
                                                              "session_archive_read",
                                                              "memory_search"]
    result = next(m for m in second["messages"] if m["role"] == "tool")["content"]
    # read-only: runs piped, without --yes, even with approval: never
    assert result.startswith("# Skill: pdf-forms\n\nStep one: open the form.")
    assert "fields.md" in result


def test_a_skill_without_front_matter_is_named(tmp_path: Path) -> None:
    (tmp_path / "skilled.py").write_text(AGENT)
    (tmp_path / "skills" / "bad").mkdir(parents=True)
    (tmp_path / "skills" / "bad" / "SKILL.md").write_text("# no front matter\n")
    done = run_piped(tmp_path, "hi\n", "skilled.py")
    assert done.returncode == 2
    assert done.stderr.strip().startswith("rollchat: error: ")
    assert "skills/bad/SKILL.md:1: a SKILL.md starts with front matter" in done.stderr


def test_a_missing_skills_folder_is_named(tmp_path: Path) -> None:
    (tmp_path / "skilled.py").write_text(AGENT)
    done = run_piped(tmp_path, "hi\n", "skilled.py")
    assert done.returncode == 2
    assert "skills: the skills folder does not exist" in done.stderr


def test_a_bad_skill_name_is_named(tmp_path: Path) -> None:
    (tmp_path / "skilled.py").write_text(AGENT)
    make_skill(tmp_path, "x", "name: Bad Name\ndescription: d")
    done = run_piped(tmp_path, "hi\n", "skilled.py")
    assert done.returncode == 2
    assert "name: must be 1-64 lowercase letters, digits or '-' (got 'Bad Name')" in done.stderr
