"""Every command the README and docs/ show is run, as a reader would type it, and shows what
the page says it shows.

A ```console block holds commands: a line `$ COMMAND` (a line ending in `\\` goes on), the
`You: TEXT` lines after it are typed into it (piped stdin: the chat it starts), and every other
line is output the command must print, in that order (`…` stands for any text). A command ends
with exit status 0 unless its line says `# exit status N`. A page's commands run one after
another in one fresh project directory (with a copy of examples/ and `.venv` linking this
interpreter's environment) and one fresh HOME, with the offline model, so a later command sees
the sessions an earlier one saved. The set-up commands (a venv and pip) are checked apart: see
test_docs_setup.py.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from tests import forkrelay
from tests.e2e import _STARTING_ENV, _clean_env, clean_env

ROOT = Path(__file__).resolve().parents[1]
# docs/architecture.md is the code's map (no commands); every other page is read.
PAGES = [ROOT / "README.md", *sorted(p for p in (ROOT / "docs").glob("*.md")
                                     if p.name != "architecture.md")]
# Pages whose ```sh blocks are not run (each with why): none now.
NOT_RUN_YET: dict[str, str] = {}
FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```", re.MULTILINE | re.DOTALL)
STATUS = re.compile(r"#.*\bexit status (\d+)")


@dataclass(frozen=True)
class Command:
    """One `$` line of a page: what runs, what it is fed, and what it must show."""

    page: str
    line: int
    shell: str
    stdin: str
    shown: tuple[str, ...]
    status: int


def fences(text: str) -> list[tuple[str, str, int]]:
    """(language, body, line number of the body's first line) of each fenced block."""
    return [(m.group(1), m.group(2), text.count("\n", 0, m.start(2)) + 1)
            for m in FENCE.finditer(text)]


def commands(page: Path) -> list[Command]:
    """The commands of ``page``'s console blocks, in page order."""
    text = page.read_text(encoding="utf-8")
    found: list[Command] = []
    for lang, body, first in fences(text):
        if lang == "console":
            found += _block(page.name, body, first)
    return found


def _block(page: str, body: str, first: int) -> list[Command]:
    found: list[Command] = []
    lines = body.splitlines()
    i = 0
    while i < len(lines):
        assert lines[i].startswith("$ "), f"{page}:{first + i}: a console block starts with '$ '"
        start, shell = i, lines[i][2:]
        while shell.endswith("\\"):
            i += 1
            shell = shell[:-1] + " " + lines[i].strip()
        typed: list[str] = []
        shown: list[str] = []
        i += 1
        while i < len(lines) and not lines[i].startswith("$ "):
            line = lines[i]
            if line.startswith("You: "):
                typed.append(line[5:])
            elif line.strip():
                shown.append(line.strip())
            i += 1
        assert not (typed and "|" in shell), f"{page}:{first + start}: piped and typed"
        status = STATUS.search(shell)
        found.append(Command(page, first + start, shell, "".join(t + "\n" for t in typed),
                             tuple(shown), int(status.group(1)) if status else 0))
    return found


def shows(output: str, shown: tuple[str, ...]) -> str | None:
    """The first shown line that ``output`` lacks (in order; `…` is any text), else None."""
    flat = " ".join(output.split())
    at = 0
    for line in shown:
        pattern = ".*?".join(re.escape(" ".join(part.split())) for part in line.split("…"))
        found = re.compile(pattern).search(flat, at)
        if found is None:
            return line
        at = found.end()
    return None


def project(tmp: Path, activated: bool = True,
            relay: Path | None = None) -> tuple[Path, dict[str, str]]:
    """A fresh project directory and environment: HOME inside ``tmp``, no API keys, this
    interpreter's environment linked as ``.venv`` (the README's set-up). ``activated``: that
    environment first on PATH, as the docs/ pages assume (`. .venv/bin/activate`); else no
    `rollchat` on PATH at all, as right after the README's set-up. ``relay`` (a directory of
    tests/forkrelay.py's ``rollchat``): ``.venv`` links each entry of this environment but
    ``bin/rollchat``, which is that script."""
    work = tmp / "project"
    shutil.copytree(ROOT / "examples", work / "examples",
                    ignore=shutil.ignore_patterns("__pycache__", "notes.json", "sessions"))
    venv, prefix = work / ".venv", Path(sys.prefix)
    if relay is None:
        venv.symlink_to(prefix, target_is_directory=True)
    else:
        (venv / "bin").mkdir(parents=True)
        for entry in prefix.iterdir():
            if entry.name != "bin":
                (venv / entry.name).symlink_to(entry)
        for entry in (prefix / "bin").iterdir():
            (venv / "bin" / entry.name).symlink_to(relay / "rollchat" if entry.name ==
                                                   "rollchat" else entry)
    env = clean_env(tmp / "home")
    path = [d for d in env.get("PATH", "/usr/bin:/bin").split(":")
            if d and not (Path(d) / "rollchat").exists()]
    env["PATH"] = ":".join([str(Path(sys.executable).parent), *path] if activated else path)
    env.pop("VISUAL", None)
    env["EDITOR"] = env["PAGER"] = "cat"
    return work, env


def run(command: Command, cwd: Path, env: dict[str, str]) -> tuple[Path, str, int]:
    """Run ``command`` in ``cwd``: (the directory it ended in, its output, its exit status)."""
    where = cwd.parent / "pwd"
    script = f"{command.shell}\nstatus=$?\npwd > {where}\nexit $status\n"
    done = subprocess.run(["bash", "-c", script], cwd=cwd, env=env, input=command.stdin,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=90)
    return Path(where.read_text().strip()), done.stdout, done.returncode


ALL = [c for page in PAGES for c in commands(page)]


def test_the_pages_show_commands() -> None:
    """The extraction finds what the pages hold (a broken pattern would test nothing)."""
    assert len(ALL) >= 30
    assert {c.page for c in ALL} >= {"README.md", "commands.md", "sessions.md",
                                     "compaction.md", "memory.md", "mcp.md", "import.md",
                                     "agents.md", "configuration.md"}
    assert any(c.stdin for c in ALL) and any(c.status for c in ALL)


def test_nothing_looks_runnable_outside_a_console_block() -> None:
    """A shell command shown any other way would escape this test: only the README's set-up
    blocks are ```sh (checked by test_docs_setup.py), and no other block has a `$ ` line."""
    for page in PAGES:
        for lang, body, first in fences(page.read_text(encoding="utf-8")):
            if lang == "console":
                continue
            assert lang not in {"sh", "bash", "shell", "zsh"} or page.name == "README.md" \
                or page.name in NOT_RUN_YET, (
                f"{page.name}:{first}: a ```{lang} block: make it ```console with '$ '")
            assert not re.search(r"^\$ ", body, re.MULTILINE), f"{page.name}:{first}"


@pytest.mark.parametrize("page", [p for p in PAGES if commands(p)], ids=lambda p: p.name)
def test_every_command_of_the_page_runs(page: Path, tmp_path: Path) -> None:
    """A docs/ page's ``rollchat`` (PATH) is forked by the tests' fork server through
    tests/forkrelay.py, a process of its own as a new interpreter's; the README's set-up
    leaves none on PATH, and its `.venv/bin/rollchat` is that script too (the installed one,
    the same ``rollchat.__main__:main``, runs a chat in test_docs_setup.py and ``--version``
    in test_after_the_readme_set_up_rollchat_is_not_on_path)."""
    activated = page.name != "README.md"
    with forkrelay.rollchat_on_path(lambda home: _clean_env(_STARTING_ENV, home)) as relay:
        cwd, env = project(tmp_path, activated=activated, relay=None if activated else relay)
        if activated:
            env["PATH"] = f"{relay}:{env['PATH']}"
        for command in commands(page):
            cwd, output, status = run(command, cwd, env)
            where = f"{command.page}:{command.line}: {command.shell}\n{output}"
            assert status == command.status, where
            missing = shows(output, command.shown)
            assert missing is None, f"not shown: {missing!r}\n{where}"


def test_shows_finds_lines_in_order_with_ellipses() -> None:
    out = "Saved session: a_1 (2 queries,   924 tokens billed)\nGoodbye!\n"
    assert shows(out, ("Saved session: … (2 queries, … tokens billed)", "Goodbye!")) is None
    assert shows(out, ("Goodbye!", "Saved session")) == "Saved session"
    assert shows(out, ("(3 queries",)) == "(3 queries"


def test_after_the_readme_set_up_rollchat_is_not_on_path(tmp_path: Path) -> None:
    """So a README command that says `rollchat` rather than `.venv/bin/rollchat` fails."""
    cwd, env = project(tmp_path, activated=False)
    bare = Command("README.md", 1, "rollchat --version", "", (), 0)
    assert run(bare, cwd, env)[2] == 127
    _, output, status = run(replace(bare, shell=".venv/bin/rollchat --version"), cwd, env)
    assert status == 0 and output.startswith("rollchat ")


# Pages linked before they land on main: none now.
NOT_ON_MAIN_YET: set[Path] = set()
LINK = re.compile(r"\]\(([^)#\s]+\.md)(?:#([\w-]+))?\)")


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lowercase, punctuation dropped, spaces to dashes."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_every_link_between_the_pages_leads_somewhere() -> None:
    for page in PAGES:
        for target, anchor in LINK.findall(page.read_text(encoding="utf-8")):
            path = (page.parent / target).resolve()
            if path in NOT_ON_MAIN_YET and not path.exists():
                continue
            assert path.is_file(), f"{page.name}: no such page {target}"
            if anchor:
                headings = re.findall(r"^#+ (.*)$", path.read_text(encoding="utf-8"), re.M)
                assert anchor in {slug(h) for h in headings}, f"{page.name}: {target}#{anchor}"
