"""Resolving a session by number through the sessions index imports no ``dataclasses`` (and
with it inspect, ast, dis, tokenize): `compact N --json` and `--focus` answered from their cache
take that path and are timed against `--version` (bench/bench_cli.py, goal at most 3x)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from rollchat.storage.index import SessionIndex
from tests.e2e import clean_env
from tests.storage.test_index import write_session

PROBE = """
import sys
from pathlib import Path
from rollchat.storage.index import SessionIndex
info = SessionIndex(Path(sys.argv[1])).resolve("1")
print(info.session_id, info._replace(number=7).number, "dataclasses" in sys.modules)
"""


def test_a_number_is_resolved_without_importing_dataclasses(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    write_session(root, 1)
    newest = write_session(root, 2)
    hour_ago = time.time() - 3600  # (a file changed just before it was indexed is read again)
    for path in root.iterdir():
        os.utime(path, (hour_ago, hour_ago))
    SessionIndex(root).resolve("1")  # the index built, as `compact` finds it after a chat
    done = subprocess.run([sys.executable, "-c", PROBE, str(root)], cwd=tmp_path,
                          env=clean_env(tmp_path / "home"), capture_output=True, text=True,
                          timeout=60)
    assert done.stdout.split() == [newest, "7", "False"], done.stderr
