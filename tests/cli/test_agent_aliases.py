"""``rollchat agents add NAME PATH`` / ``agents`` / ``agents remove NAME``: the user config
before and after (its comments kept), and ``rollchat NAME`` / ``--agent NAME`` from any
directory, a project with its own config included."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rollchat.cli.agents import SUBCOMMANDS
from rollchat.cli.app import build_cli
from tests.e2e import run_piped

CONFIG = """# My rollchat settings
session:
  dir: ~/chats   # where my chats go

# keep the summary short
summary:
  max_words: 300
"""
AGENT = 'name = "Helper"\n\n\ndef word_count(text: str) -> str:\n    """Count words.\n\n' \
        '    Args:\n        text: The text.\n    """\n    return f"{len(text.split())} words"\n'


def _config() -> Path:
    return Path(os.environ["XDG_CONFIG_HOME"]) / "rollchat" / "config.yml"


def _cli(*args: str, cwd: Path) -> tuple[int, str]:
    old = Path.cwd()
    os.chdir(cwd)
    try:
        done = CliRunner().invoke(build_cli(), list(args))
    finally:
        os.chdir(old)
    return done.exit_code, done.output


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "helper.py").write_text(AGENT)
    _config().parent.mkdir(parents=True, exist_ok=True)
    _config().write_text(CONFIG)
    return tmp_path / "proj"


def test_add_writes_the_alias_and_keeps_the_config_as_it_was(project: Path) -> None:
    code, out = _cli("agents", "add", "dev", "helper.py", cwd=project)
    assert code == 0, out
    agent = project / "helper.py"
    assert out.startswith(f"Saved agent dev ({agent}) in {_config()}")
    assert _config().read_text() == CONFIG + (
        f"agents:\n  assistant: {{}}\n  dev:\n    file: {agent}\n")
    code, out = _cli("agents", cwd=project)
    assert (code, out.splitlines()[:2]) == (0, ["assistant  (set up in the config)",
                                                f"dev        {agent}"])
    # a second alias goes into the same mapping; comments inside it stay too
    _config().write_text(_config().read_text().replace("  dev:\n", "  dev:  # mine\n"))
    assert _cli("agents", "add", "dev2", "helper.py", cwd=project)[0] == 0
    assert _config().read_text() == CONFIG + (
        f"agents:\n  assistant: {{}}\n  dev:  # mine\n    file: {agent}\n"
        f"  dev2:\n    file: {agent}\n")
    assert _cli("agents", "remove", "dev2", cwd=project)[0] == 0
    assert _config().read_text() == CONFIG + (
        f"agents:\n  assistant: {{}}\n  dev:  # mine\n    file: {agent}\n")
    code, out = _cli("agents", "remove", "dev2", cwd=project)
    assert code == 1 and "no agent dev2 in" in out


def test_names_that_mean_something_else_are_refused(project: Path) -> None:
    (project / "notes").write_text("x")
    for name, says in (("sessions", "sessions is a rollchat subcommand"),
                       ("notes", "notes is also a file here"),
                       ("helper.py", "helper.py looks like an agent file"),
                       ("bad name", "agent names are 1-64 letters")):
        code, out = _cli("agents", "add", name, "helper.py", cwd=project)
        assert code == 2 and says in out, (name, out)
    code, out = _cli("agents", "add", "dev", "missing.py", cwd=project)
    assert code == 1 and "missing.py: no such file" in out
    assert _config().read_text() == CONFIG  # nothing written
    _config().write_text(CONFIG + "summary_typo: 1\n")  # a config that does not load
    code, out = _cli("agents", "add", "dev", "helper.py", cwd=project)
    assert code == 1 and "summary_typo" in out
    assert _config().read_text() == CONFIG + "summary_typo: 1\n"


def test_a_config_of_comments_only_keeps_them(project: Path) -> None:
    _config().write_text("# nothing set yet\n")
    assert _cli("agents", "add", "dev", "helper.py", cwd=project)[0] == 0
    assert _config().read_text() == (f"# nothing set yet\nagents:\n  assistant: {{}}\n  dev:\n"
                                     f"    file: {project / 'helper.py'}\n")


def test_the_alias_starts_from_any_directory(project: Path, tmp_path: Path) -> None:
    assert _cli("agents", "add", "dev", "helper.py", cwd=project)[0] == 0
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "rollchat.yml").write_text("summary:\n  max_words: 200\n")  # its own config
    for args in (["dev"], ["--agent", "dev"]):
        done = run_piped(elsewhere, 'use word_count text="a b c"\nexit\n', *args, "--no-save",
                         "--yes", env=dict(os.environ), timeout=120)
        assert done.returncode == 0, done.stderr
        assert done.stdout.startswith("rollchat · Helper ·") and "3 words" in done.stdout
    done = run_piped(elsewhere, None, "nobody", env=dict(os.environ), timeout=120)
    assert done.returncode == 2 and "no such command 'nobody'" in done.stderr


def test_the_names_refused_are_the_subcommands() -> None:
    app = build_cli()
    names = {c.name for c in app.registered_commands} | {
        g.name for g in app.registered_groups}
    assert names <= SUBCOMMANDS and SUBCOMMANDS - names == {"help"}
