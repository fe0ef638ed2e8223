"""The suite's own isolation (tests/conftest.py): each test has a HOME and XDG directories of
its own, so no real user config, history or memory is read; its Python children share a
bytecode cache."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.e2e import PYCACHE


def test_user_dirs_are_the_tests_own() -> None:
    import platformdirs

    from rollchat.config.settings import default_user_config_dir

    home = Path(os.environ["HOME"])
    assert Path(os.path.expanduser("~")) == home and not list(home.iterdir())
    for var in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
        assert Path(os.environ[var]).is_relative_to(home), var
    for where in (default_user_config_dir(), platformdirs.user_data_dir("rollchat"),
                  platformdirs.user_state_dir("rollchat"),
                  platformdirs.user_cache_dir("rollchat")):
        assert Path(where).is_relative_to(home), where


def test_children_get_the_bytecode_cache() -> None:
    code = "import sys; print(int(sys.flags.dont_write_bytecode), sys.pycache_prefix)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60, check=True).stdout.split()
    assert out == ["0", str(PYCACHE)]
