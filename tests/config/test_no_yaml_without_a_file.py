"""A command run where no YAML file is read (no config file, no project .mcp.json, Claude
Code's settings.json only as JSON) does not import the YAML parser: `sessions`, `search` and the
other listings come by the config loader on every run (bench/bench_listing.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.e2e import clean_env

PROBE = """
import sys
from pathlib import Path
from rollchat.config.load import load_config
config = load_config(config_path=None, env={}, cwd=Path.cwd(), user_config_dir=Path("conf"))
print(len(config.hooks), "yaml" in sys.modules)
"""


def test_the_config_loader_reads_no_yaml_where_there_is_none(tmp_path: Path) -> None:
    env = clean_env(tmp_path / "home")
    settings = tmp_path / "home" / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text('{"hooks": {"Stop": [{"hooks": [{"type": "command", '
                        '"command": "true"}]}]}}', encoding="utf-8")
    done = subprocess.run([sys.executable, "-c", PROBE], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.stdout.split() == ["1", "False"], done.stderr  # its hook read, without YAML
    (tmp_path / "rollchat.yml").write_text("ui:\n  offline_word_delay: 0\n", encoding="utf-8")
    done = subprocess.run([sys.executable, "-c", PROBE], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.stdout.split() == ["1", "True"], done.stderr  # (the probe can tell)
