"""A project (a cloned repository) with its own rollchat.yml, and the config read there with the
user's config directory beside it: what the untrusted-project tests start from."""

from __future__ import annotations

from pathlib import Path

from rollchat.config.load import load_config
from rollchat.config.settings import Config


def project_with(tmp_path: Path, text: str) -> Path:
    """A project directory whose rollchat.yml holds ``text``."""
    repo = tmp_path / "repo"
    repo.mkdir(exist_ok=True)
    (repo / "rollchat.yml").write_text(text, encoding="utf-8")
    return repo


def load_in(repo: Path, user_dir: Path) -> Config:
    """The config a chat started in ``repo`` reads (no environment, ``user_dir`` the user's)."""
    return load_config(config_path=None, env={}, cwd=repo, user_config_dir=user_dir)
