"""The walkthrough of examples/hooks/README.md runs as written (in a shell, from a copy of the
repository's examples, with the offline model): the guard refuses the delete, the log and the
backups are written, the second compact is cancelled, AGENTS.md is loaded."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

from rollchat.storage.transcript import parse
from tests.e2e import clean_env

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "examples" / "hooks" / "README.md").read_text(encoding="utf-8")


def test_the_hooks_walkthrough_runs_as_written(tmp_path: Path) -> None:
    block = re.search(r"<!-- hooks-walkthrough -->\n```sh\n(.*?)```", README, re.DOTALL)
    assert block is not None
    shutil.copytree(ROOT / "examples", tmp_path / "examples")  # `cp -r examples/hooks ...`
    env = clean_env(tmp_path / "home")
    env["PATH"] = f"{Path(sys.executable).parent}:{env['PATH']}"  # this checkout's rollchat
    done = subprocess.run(["bash", "-euo", "pipefail", "-c", block.group(1)], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=120)
    out = done.stdout
    assert done.returncode == 0, out + done.stderr
    demo = tmp_path / "hooks-demo"
    assert "Trusted rollchat.yml: agents.assistant.file, hooks now apply" in out
    assert ("← delete_file: refused by a PreToolUse hook: keep/plan.md is under keep/, which "
            "this project never deletes") in out
    assert (demo / "keep" / "plan.md").read_text(encoding="utf-8") == "ship on Friday\n"
    assert (demo / "tools.log").read_text(encoding="utf-8") == "write_file\n"
    assert ("Warning: Compaction cancelled by a PreCompact hook: this session mentions a "
            "secret: not summarizing it") in out
    assert "  AGENTS.md  141 bytes" in out
    backups = [parse(b.read_text(encoding="utf-8")) for b in (demo / "backups").glob("*.md")]
    assert len(backups) == 2  # before the compact that ran, and the one cancelled
    [first] = [b for b in backups if b.turns and b.turns[0].user.startswith("use write_file")]
    [second] = [b for b in backups if b is not first]
    assert "the secret word is plover" in [t.user for t in second.turns]
    assert [t.user for t in first.turns][:2] == [
        'use write_file {"path": "keep/plan.md", "text": "ship on Friday"}',
        'use delete_file {"path": "keep/plan.md"}']
    assert first.summary is None  # copied before it was summarized
