"""The README's two set-up commands stay exactly true.

They create a virtual environment and install from PyPI, which a test cannot do on every run,
so they are checked in parts: CI (.ci/run) runs the test command exactly as the README gives it
(extracted here with .ci/run's own awk line), both commands install this project the same way,
the extras and the entry point they need exist, and the last step of the chat command
(`.venv/bin/rollchat`) is run as written.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_docs import fences, project

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
CI = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
PYPROJECT = (ROOT / "pyproject.toml").read_text(encoding="utf-8")  # no tomllib on 3.10
VENV = "python3 -m venv .venv"
STRANDS = "1.62.0"  # the strands-agents the test command installs (without its mcp<2.2 pin)
PINS = "constraints.txt"  # the versions the test command's install is held to


def marked(name: str) -> str:
    """The command of the ```sh block between <!-- NAME --> and <!-- /NAME -->."""
    found = re.search(rf"<!-- {name} -->\n```sh\n(.*?)\n```\n<!-- /{name} -->", README,
                      re.DOTALL)
    assert found is not None, f"README.md: no <!-- {name} --> block"
    return found.group(1)


def test_ci_runs_exactly_the_readme_test_command() -> None:
    awk = re.search(r"^cmd=\$\((awk .*)\)$", CI, re.MULTILINE)
    assert awk is not None
    extracted = subprocess.run(["bash", "-c", awk.group(1)], cwd=ROOT, capture_output=True,
                               text=True, check=True).stdout.strip()
    assert extracted == marked("test-command")
    assert 'bash -euo pipefail -c "$cmd"' in CI and "rm -rf .venv" in CI


def test_the_test_command_installs_and_runs_tests_ruff_and_mypy() -> None:
    steps = marked("test-command").split(" && ")
    # the frameworks extra: the framework adapters' tests drive the real packages
    assert steps[:3] == [VENV,
                         f".venv/bin/pip install --no-compile -e '.[test,frameworks]' -c {PINS}",
                         f".venv/bin/pip install --no-deps strands-agents=={STRANDS}"]
    assert steps[3].startswith(".venv/bin/python -m pytest")
    assert steps[4:] == [".venv/bin/ruff check src tests", ".venv/bin/mypy"]
    test_deps = PYPROJECT.split("\ntest = [", 1)[1].split("]", 1)[0]
    if " -n " in steps[2]:  # pytest-xdist gives -n
        assert "pytest-xdist" in test_deps
    for tool in ("pytest", "ruff", "mypy"):
        assert tool in test_deps


def _listed(block: str) -> list[str]:
    """The requirements of pyproject.toml's list that opens with ``block`` (``name = [``)."""
    body = PYPROJECT.split(f"\n{block}\n", 1)[1].split("\n]", 1)[0]
    return [m.group(1) for line in body.splitlines()
            if (m := re.match(r'\s*"([^"]+)"', line.split("#", 1)[0]))]


def test_the_constraints_pin_each_requirement_of_the_install_within_its_range() -> None:
    """constraints.txt holds one version of each package (none twice, none of rollchat), and
    the version of each of rollchat's requirements and of its test and frameworks extras lies
    in pyproject.toml's range: a floor raised past its pin fails here, not in CI's install."""
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    lines = [line for line in (ROOT / PINS).read_text(encoding="utf-8").splitlines()
             if line.strip() and not line.startswith("#")]
    pins = [re.fullmatch(r"([A-Za-z0-9][A-Za-z0-9._-]*)==([0-9][0-9A-Za-z.+!-]*)", line)
            for line in lines]
    assert None not in pins, [line for line, pin in zip(lines, pins, strict=True) if pin is None]
    pinned = {canonicalize_name(p.group(1)): p.group(2) for p in pins if p is not None}
    assert len(pinned) == len(lines) and "rollchat" not in pinned
    wanted = [*_listed("dependencies = ["), *_listed("test = ["), *_listed("frameworks = [")]
    assert len(wanted) >= 40  # the three lists were found
    outside = []
    for line in wanted:
        need = Requirement(line)
        have = pinned.get(canonicalize_name(need.name))
        if have is None or not need.specifier.contains(have, prereleases=True):
            outside.append(f"{need} (pinned: {have})")
    assert outside == []


def test_strands_without_its_deps_has_all_it_requires_but_its_mcp_bound() -> None:
    """strands-agents goes in with --no-deps (it declares mcp<2.2, rollchat needs mcp>=2.3):
    the frameworks extra must bring every other requirement of the version the test command
    pins, and the one it pins is the one installed here."""
    from importlib import metadata

    from packaging.requirements import Requirement

    try:
        installed = metadata.version("strands-agents")
    except metadata.PackageNotFoundError:
        pytest.skip("strands-agents is not installed")
    assert installed == STRANDS
    unmet = []
    for line in metadata.requires("strands-agents") or []:
        need = Requirement(line)
        if need.marker is not None and not need.marker.evaluate({"extra": ""}):
            continue  # an extra of Strands (its other model providers), or another platform
        try:
            have = metadata.version(need.name)
        except metadata.PackageNotFoundError:
            have = None
        if have is None or not need.specifier.contains(have, prereleases=True):
            unmet.append(f"{need} (installed: {have})")
    assert [line for line in unmet if not line.startswith("mcp")] == []


def test_the_chat_command_installs_and_starts_the_offline_chat(tmp_path: Path) -> None:
    steps = marked("chat-command").split(" && ")
    assert steps == [VENV, ".venv/bin/pip install -e .", ".venv/bin/rollchat"]
    assert '[project.scripts]\nrollchat = "rollchat.__main__:main"' in PYPROJECT
    cwd, env = project(tmp_path, activated=False)  # .venv: this interpreter's environment
    done = subprocess.run(["bash", "-c", steps[2]], cwd=cwd, env=env, input="hello\n",
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "offline model" in done.stdout and "Goodbye" in done.stdout


def test_only_the_set_up_commands_are_sh_blocks() -> None:
    sh = [body.strip() for lang, body, _ in fences(README) if lang == "sh"]
    assert sh == [marked("chat-command"), marked("test-command")]


def test_this_interpreter_is_the_one_the_readme_installs() -> None:
    """The docs tests run `rollchat` and `.venv/bin/rollchat` from this interpreter's
    environment, the one the README's set-up makes."""
    assert (Path(sys.executable).parent / "rollchat").exists()
