"""compaction.engine and hygiene per agent: the defaults, the values read, clear messages."""

from __future__ import annotations

from pathlib import Path

from rollchat.config.compaction import CompactionSettings
from tests.config.test_config import error, load


def test_defaults_are_rollchat(tmp_path: Path) -> None:
    agent = load(tmp_path).agent
    assert agent.compaction == CompactionSettings(engine="rollchat")
    assert agent.hygiene == "rollchat"


def test_per_agent_values(tmp_path: Path) -> None:
    config = load(tmp_path, "agents:\n  a:\n    provider: anthropic\n    compaction:\n"
                            "      engine: provider\n    hygiene: provider\n  b: {}\n")
    assert config.agents["a"].compaction.engine == "provider"
    assert config.agents["a"].hygiene == "provider"
    assert config.agents["b"].compaction.engine == "rollchat"


def test_bad_values_say_what_is_accepted(tmp_path: Path) -> None:
    message = error(tmp_path, "agents:\n  a:\n    compaction:\n      engine: server\n")
    assert "agents.a.compaction.engine: must be rollchat or provider" in message
    assert "'server'" in message and ":4:" in message
    message = error(tmp_path, "agents:\n  a:\n    hygiene: yes\n")
    assert "agents.a.hygiene: must be rollchat or provider" in message
    message = error(tmp_path, "agents:\n  a:\n    compaction:\n      engin: provider\n")
    assert "agents.a.compaction.engin: unknown key (did you mean 'engine'?)" in message
    message = error(tmp_path, "agents:\n  a:\n    compaction: provider\n")
    assert "agents.a.compaction: must be a mapping" in message
