"""Every command's plain --help: "[required]" reads as it is (typer used to escape it for rich,
showing "\\[required]"), and asking for help imports no rich."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e import clean_env, run_piped

COMMANDS = [[], ["show"], ["import"], ["memory"], ["memory", "forget"], ["compact"]]


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c) or "rollchat")
def test_help_is_plain_text(tmp_path: Path, command: list[str]) -> None:
    done = run_piped(tmp_path, "", *command, "--help")
    assert done.returncode == 0, done.stderr
    assert "\\[" not in done.stdout and "Usage: " in done.stdout
    if command in (["show"], ["import"], ["memory", "forget"]):  # each has a required argument
        assert "  [required]" in done.stdout


PROBE = """
import sys
from rollchat.cli.app import build_cli
try:
    build_cli()(["show", "--help"], prog_name="rollchat")
except SystemExit:
    pass
print("RICH", sorted(m for m in sys.modules if m.startswith("rich")))
"""


def test_help_does_not_import_rich(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-c", PROBE], cwd=str(tmp_path), capture_output=True,
                          text=True, timeout=60, env=clean_env(tmp_path / "home"))
    assert "[required]" in done.stdout and "\\[required]" not in done.stdout
    assert done.stdout.rstrip().endswith("RICH []"), done.stdout
