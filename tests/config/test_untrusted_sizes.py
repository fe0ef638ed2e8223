"""Issue 33, item 1 (the sizes): an untrusted project file may lower a bound but never raise it,
and the settings that size requests (a model's context window, tool results, concurrency,
thinking, the session's compaction sizes) are taken from it only once trusted; a larger safety
margin is the safer one, so it may be raised untrusted, never lowered. Each refused setting is
named in one line with `rollchat trust`."""

from __future__ import annotations

from pathlib import Path

from rollchat.config.load import trust_file
from rollchat.config.settings import Config
from tests.config.untrusted import load_in, project_with
from tests.e2e import clean_env, run_piped

LOOSE = (
    "models: {offline: {context_window: 2048}, big: {context_window: 5000000, images: true}}\n"
    "tools: {max_result_tokens: 5000000}\n"
    "session: {compact_threshold: 1.0, keep_recent_turns: 500, compact_every_turns: 1,\n"
    "          safety_margin_tokens: 0}\n"
    "agents: {assistant: {concurrency: 64, thinking: 60000}}\n"
)
LOOSENED = {
    "models.offline.context_window", "models.big.context_window", "tools.max_result_tokens",
    "session.compact_threshold", "session.keep_recent_turns", "session.compact_every_turns",
    "session.safety_margin_tokens", "agents.assistant.concurrency",
    "agents.assistant.thinking",
}




def test_an_untrusted_file_cannot_loosen_a_size(tmp_path: Path) -> None:
    config = load_in(project_with(tmp_path, LOOSE), tmp_path / "u")
    assert set(config.ignored_settings) == LOOSENED
    default = Config()
    assert config.models["offline"].context_window is None
    assert config.models["big"].context_window is None and config.models["big"].images
    assert config.tools == default.tools
    assert config.session.compact_threshold == default.session.compact_threshold
    assert config.session.keep_recent_turns == default.session.keep_recent_turns
    assert config.session.compact_every_turns == 0
    assert config.session.safety_margin_tokens == default.session.safety_margin_tokens
    assert config.agent.concurrency is None and config.agent.thinking is None
    notice = config.trust_notice
    assert notice is not None and "\n" not in notice and "`rollchat trust`" in notice
    assert all(key in notice for key in LOOSENED)
    assert "lower a safety margin" in notice and "size requests" in notice


def test_an_untrusted_file_may_tighten_a_size_and_raise_the_margin(tmp_path: Path) -> None:
    config = load_in(project_with(tmp_path, (
        "session: {compact_threshold: 0.5, keep_recent_turns: 1, compact_every_turns: 0,\n"
        "          safety_margin_tokens: 50000}\n"
        "agents: {assistant: {concurrency: 1, thinking: off}}\n"
        "tools: {max_result_tokens: null}\n")), tmp_path / "u")
    assert config.ignored_settings == () and config.trust_notice is None
    assert config.session.compact_threshold == 0.5 and config.session.keep_recent_turns == 1
    assert config.session.safety_margin_tokens == 50000
    assert config.agent.concurrency == 1 and config.agent.thinking == "off"


def test_once_trusted_every_size_applies(tmp_path: Path) -> None:
    repo = project_with(tmp_path, LOOSE)
    user_dir = tmp_path / "u"
    said = trust_file(repo / "rollchat.yml", cwd=repo, user_config_dir=user_dir)
    assert all(key in said for key in LOOSENED)  # "Trusted rollchat.yml: ... now apply"
    config = load_in(repo, user_dir)
    assert config.ignored_settings == () and config.trust_notice is None
    assert config.models["offline"].context_window == 2048
    assert config.models["big"].context_window == 5000000
    assert config.tools.max_result_tokens == 5000000
    assert config.session.compact_threshold == 1.0 and config.session.keep_recent_turns == 500
    assert config.session.compact_every_turns == 1 and config.session.safety_margin_tokens == 0
    assert config.agent.concurrency == 64 and config.agent.thinking == 60000


def test_a_chat_in_an_untrusted_repo_names_the_refused_window_once(tmp_path: Path) -> None:
    """The user's view: one line naming the setting and `rollchat trust`, and the chat keeps
    the model's own window (a 2,048-token window would compact at almost every message)."""
    repo = project_with(tmp_path, "models: {offline: {context_window: 2048}}\n")
    done = run_piped(repo, "hello\ncontext\nexit\n", "--provider", "offline",
                     env=clean_env(tmp_path / "home"))
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stdout.splitlines()
             if "models.offline.context_window" in line]
    assert len(lines) == 1 and "`rollchat trust`" in lines[0], done.stdout
    assert "2,048" not in done.stdout and "2K" not in done.stdout, done.stdout
