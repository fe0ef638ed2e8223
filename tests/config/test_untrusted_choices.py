"""Issue 33, item 1 (who reads the conversation and what it costs): an untrusted project file
cannot send the conversation to another provider or model with the user's keys, have OpenAI keep
it, change the prices shown, add model calls (summaries, fact extraction at every pause) or turn
prompt caching off; each such setting is taken only in its safe direction (offline, local, off,
a longer wait), else named in the one line with `rollchat trust`."""

from __future__ import annotations

from pathlib import Path

import pytest

from rollchat.config.load import trust_file
from rollchat.config.settings import Config
from rollchat.providers.names import DEFAULT_MODELS, OPENAI
from tests.config.untrusted import load_in, project_with
from tests.e2e import clean_env, run_piped
from tests.wire_servers import OpenAIDialect, WireServer

CHOSEN = (
    "default_agent: bot\n"
    "agents:\n"
    "  bot: {provider: openai, model: pricey-model, name: Repo Bot,\n"
    "        mcp_servers: {s: {command: x}}}\n"
    "summary: {provider: anthropic, model: pricey-summary, on_exit: model, one_shot: model}\n"
    "models: {gpt-4o-mini: {store: true, price: {input: 0, output: 0}}}\n"
    "memory: {idle_seconds: 1}\n"
    "session: {history: relevant}\n"
    "ui: {offline_word_delay: 10}\n"
)
REFUSED = {
    "agents.bot.provider", "agents.bot.model", "agents.bot.mcp_servers", "summary.provider",
    "summary.model", "summary.on_exit", "summary.one_shot", "models.gpt-4o-mini.store",
    "models.gpt-4o-mini.price", "memory.idle_seconds", "session.history",
    "ui.offline_word_delay",
}


# One rule each: the setting alone, and the key it is refused as.
RULES = [
    ("agents: {assistant: {provider: openai}}", "agents.assistant.provider"),
    ("agents: {assistant: {model: pricey-model}}", "agents.assistant.model"),
    ("summary: {provider: openai}", "summary.provider"),
    ("summary: {model: pricey-summary}", "summary.model"),
    ("summary: {on_exit: model}", "summary.on_exit"),
    ("summary: {one_shot: model}", "summary.one_shot"),
    ("models: {m: {store: true}}", "models.m.store"),
    ("models: {m: {price: {input: 0, output: 0}}}", "models.m.price"),
    ("memory: {idle_seconds: 299}", "memory.idle_seconds"),
    ("session: {history: relevant}", "session.history"),
    ("ui: {offline_word_delay: 0.5}", "ui.offline_word_delay"),
]




@pytest.mark.parametrize(("text", "key"), RULES, ids=[key for _, key in RULES])
def test_each_choice_is_refused_untrusted(tmp_path: Path, text: str, key: str) -> None:
    config = load_in(project_with(tmp_path, text + "\n"), tmp_path / "u")
    assert config.ignored_settings == (key,)
    assert config.trust_notice is not None and key in config.trust_notice


def test_an_untrusted_file_cannot_choose_who_reads_or_what_it_costs(tmp_path: Path) -> None:
    config = load_in(project_with(tmp_path, CHOSEN), tmp_path / "u")
    assert set(config.ignored_settings) == REFUSED
    default = Config()
    agent = config.agents["bot"]
    assert agent.name == "Repo Bot"  # the harmless settings apply
    assert agent.provider == default.agent.provider and agent.model is None
    assert config.summary == default.summary
    assert not config.store_for("gpt-4o-mini") and config.prices == {}
    assert config.memory.idle_seconds == default.memory.idle_seconds
    assert config.session.history == "all"
    assert config.ui.offline_word_delay is None
    notice = config.trust_notice
    assert notice is not None and "\n" not in notice and "`rollchat trust`" in notice
    assert all(key in notice for key in REFUSED)
    for risk in ("send your conversation to another provider or model",
                 "have the provider keep your conversation", "add model calls",
                 "change the costs you are shown", "raise a limit"):
        assert risk in notice


def test_an_untrusted_file_may_choose_the_safe_side(tmp_path: Path) -> None:
    config = load_in(project_with(tmp_path, (
        "agents: {assistant: {provider: offline, model: null}, other: {provider: auto}}\n"
        "summary: {provider: offline, on_exit: skip, one_shot: local}\n"
        "models: {m: {store: false}}\n"
        "memory: {idle_seconds: 0}\n"
        "session: {history: all}\n"
        "ui: {offline_word_delay: 0}\n")), tmp_path / "u")
    assert config.ignored_settings == () and config.trust_notice is None
    assert config.agent.provider == "offline" and config.summary.provider == "offline"
    assert config.summary.on_exit == "skip" and config.memory.idle_seconds == 0
    assert config.ui.offline_word_delay == 0
    for idle, on_exit in ((3600, "local"), (300, "auto")):  # a longer wait is taken too
        config = load_in(project_with(tmp_path, f"memory: {{idle_seconds: {idle}}}\n"
                                       f"summary: {{on_exit: {on_exit}}}\n"), tmp_path / "u")
        assert config.ignored_settings == () and config.memory.idle_seconds == idle


def test_once_trusted_every_choice_applies(tmp_path: Path) -> None:
    repo = project_with(tmp_path, CHOSEN)
    user_dir = tmp_path / "u"
    said = trust_file(repo / "rollchat.yml", cwd=repo, user_config_dir=user_dir)
    assert all(key in said for key in REFUSED)
    config = load_in(repo, user_dir)
    assert config.ignored_settings == () and config.trust_notice is None
    agent = config.agents["bot"]
    assert (agent.provider, agent.model) == ("openai", "pricey-model")
    assert (config.summary.provider, config.summary.model) == ("anthropic", "pricey-summary")
    assert (config.summary.on_exit, config.summary.one_shot) == ("model", "model")
    assert config.store_for("gpt-4o-mini") and "gpt-4o-mini" in config.prices
    assert config.memory.idle_seconds == 1 and config.session.history == "relevant"
    assert config.ui.offline_word_delay == 10


def test_a_chat_in_an_untrusted_repo_keeps_the_users_model(tmp_path: Path) -> None:
    """The user's view: their key and server, the provider's default model (never the
    project's dearer one, for the chat or its exit summary), one line naming the settings."""
    repo = project_with(tmp_path, (
        "agents: {assistant: {model: pricey-model}}\n"
        "summary: {model: pricey-summary, on_exit: model}\n"))
    with WireServer(OpenAIDialect()) as server:
        env = clean_env(tmp_path / "home", OPENAI_API_KEY="sk-test",
                        OPENAI_BASE_URL=server.url)
        done = run_piped(repo, "hello\nexit\n", env=env)
        models = {b.get("model") for b in server.bodies}
    assert done.returncode == 0, done.stderr
    assert models == {DEFAULT_MODELS[OPENAI]}, models
    lines = [line for line in done.stdout.splitlines() if "`rollchat trust`" in line]
    assert len(lines) == 1, done.stdout
    for key in ("agents.assistant.model", "summary.model", "summary.on_exit"):
        assert key in lines[0]
