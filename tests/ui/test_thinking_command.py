"""``thinking on|off|auto|N`` in a chat and ``thinking:`` in the config: how much Claude thinks,
on the wire (the real anthropic SDK against the local Messages server, whose model thinks by
default), with its thinking folded on the screen as a local ``<think>`` answer's is."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from rollchat.config.load import load_config
from rollchat.errors import ConfigError
from tests.e2e import clean_env, run_piped, write_config
from tests.wire_servers import AnthropicDialect, WireServer


@pytest.fixture
def thinker() -> Iterator[WireServer]:
    with WireServer(AnthropicDialect(thinks=True)) as server:
        yield server


def test_thinking_set_in_the_chat_reaches_the_next_requests(thinker: WireServer,
                                                            tmp_path: Path) -> None:
    config = write_config(tmp_path / "chat.yml", "agents:\n  assistant:\n    thinking: on\n")
    done = run_piped(tmp_path, "hello\nthinking 4096\nagain\nthinking off\nlast\nthinking\n",
                     "--provider", "anthropic", "--model", "claude-sonnet-4-5", "--base-url",
                     thinker.url, "--config", str(config), "--no-save",
                     env=clean_env(tmp_path / "home", ANTHROPIC_API_KEY="test"))
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    sent = [b.get("thinking") for b in thinker.bodies]
    shown = {"display": "summarized"}  # the thinking asked for is shown
    assert sent[:3] == [{"type": "enabled", "budget_tokens": 8192, **shown},
                        {"type": "enabled", "budget_tokens": 4096, **shown},
                        {"type": "disabled"}]
    assert "Thinking: a budget of 4,096 tokens, from the next message on." in out
    assert "thought for" in out  # folded to one dim line, as a <think> block is
    # bare `thinking` shows the latest thinking in full: the second answer's (none after off)
    assert "The user said 'again'; I will answer." in out
    assert "echo: last" in out


def test_thinking_in_the_config_is_checked(tmp_path: Path) -> None:
    good = write_config(tmp_path / "a.yml", "agents:\n  assistant:\n    thinking: 2048\n")
    config = load_config(config_path=good, env={}, cwd=tmp_path, user_config_dir=tmp_path)
    assert config.agents["assistant"].thinking == 2048
    off = write_config(tmp_path / "b.yml", "agents:\n  assistant:\n    thinking: off\n")
    config = load_config(config_path=off, env={}, cwd=tmp_path, user_config_dir=tmp_path)
    assert config.agents["assistant"].thinking == "off"
    bad = write_config(tmp_path / "c.yml", "agents:\n  assistant:\n    thinking: 100\n")
    with pytest.raises(ConfigError, match=r"thinking.*at least 1,024"):
        load_config(config_path=bad, env={}, cwd=tmp_path, user_config_dir=tmp_path)
