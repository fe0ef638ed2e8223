"""The provider registry: auto selection, building, key errors, lazy SDK imports."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

import rollchat.providers as providers
from rollchat.config.settings import AgentConfig, Config, ModelConfig, RetryConfig, UIConfig
from rollchat.errors import ConfigError
from rollchat.providers import (
    DEFAULT_MODELS,
    PROVIDER_CHOICES,
    PROVIDER_NAMES,
    REGISTRY,
    build_provider,
    prefetch_sdks,
    resolve_provider_name,
)
from rollchat.providers.anthropic import AnthropicProvider
from rollchat.providers.openai import OpenAIProvider
from rollchat.providers.openai_responses import ResponsesProvider
from tests.e2e import run_piped

OLLAMA = "http://localhost:11434/v1"


@pytest.mark.parametrize(("agent", "env", "expected"), [
    (AgentConfig(), {}, ("offline", "no API key configured")),
    (AgentConfig(), {"ANTHROPIC_API_KEY": "a"}, ("anthropic", "ANTHROPIC_API_KEY is set")),
    # the default model (gpt-5.4-mini) reasons: at OpenAI itself, the Responses API
    (AgentConfig(), {"OPENAI_API_KEY": "o"},
     ("openai-responses", "OPENAI_API_KEY is set; gpt-5.4-mini is a reasoning model: the "
                          "Responses API keeps its reasoning between turns")),
    (AgentConfig(), {"ANTHROPIC_API_KEY": "a", "OPENAI_API_KEY": "o"},
     ("anthropic", "ANTHROPIC_API_KEY is set")),
    (AgentConfig(), {"ANTHROPIC_API_KEY": ""}, ("offline", "no API key configured")),
    (AgentConfig(base_url=OLLAMA), {}, ("openai", f"base URL {OLLAMA}")),
    (AgentConfig(base_url="http://user:pw@host:8000/v1?key=s"), {},
     ("openai", "base URL http://***@host:8000/v1")),
    (AgentConfig(api_key_env="MY_KEY"), {"MY_KEY": "x"}, ("anthropic", "MY_KEY is set")),
    (AgentConfig(api_key_env="MY_KEY", base_url=OLLAMA), {"MY_KEY": "x"},
     ("openai", f"base URL {OLLAMA}")),
    (AgentConfig(api_key_env="MY_KEY"), {}, ("offline", "no API key configured")),
    (AgentConfig(provider="openai"), {"ANTHROPIC_API_KEY": "a"},  # its default model reasons
     ("openai", "configured; gpt-5.4-mini is a reasoning model: provider openai-responses "
                "would keep its reasoning between turns")),
    (AgentConfig(base_url=OLLAMA), {"ANTHROPIC_API_KEY": "a"},
     ("openai", f"base URL {OLLAMA}; ANTHROPIC_API_KEY is not sent to it: use --provider "
                "anthropic for an Anthropic server")),
    (AgentConfig(base_url=OLLAMA), {"OPENAI_API_KEY": "o"}, ("openai", f"base URL {OLLAMA}")),
    (AgentConfig(provider="anthropic", base_url=OLLAMA), {"ANTHROPIC_API_KEY": "a"},
     ("anthropic", "configured")),
    (AgentConfig(provider="openai", base_url=OLLAMA), {"ANTHROPIC_API_KEY": "a"},
     ("openai", "configured")),
    (AgentConfig(provider="offline"), {"ANTHROPIC_API_KEY": "a"}, ("offline", "configured")),
])
def test_auto_selection(agent: AgentConfig, env: dict[str, str],
                        expected: tuple[str, str]) -> None:
    assert resolve_provider_name(agent, env) == expected


def test_unknown_provider_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="unknown provider 'gemini'"):
        resolve_provider_name(AgentConfig(provider="gemini"), {})
    with pytest.raises(ConfigError, match="choose one of"):
        build_provider("gemini", AgentConfig(), Config(), {})


def test_registry_is_a_dict_of_the_four() -> None:
    assert set(REGISTRY) == {"anthropic", "openai", "openai-responses", "offline"}
    assert DEFAULT_MODELS == {"anthropic": "claude-sonnet-5-5", "openai": "gpt-5.4-mini",
                              "openai-responses": "gpt-5.4-mini", "offline": "offline"}


RESPONSES_WHY = "; {} is a reasoning model: the Responses API keeps its reasoning between turns"


@pytest.mark.parametrize(("agent", "env", "expected"), [
    (AgentConfig(model="gpt-5"), {"OPENAI_API_KEY": "o"},
     ("openai-responses", "OPENAI_API_KEY is set" + RESPONSES_WHY.format("gpt-5"))),
    (AgentConfig(model="o4-mini"), {"OPENAI_API_KEY": "o"},
     ("openai-responses", "OPENAI_API_KEY is set" + RESPONSES_WHY.format("o4-mini"))),
    (AgentConfig(model="gpt-5.2-codex", base_url="https://api.openai.com/v1"), {},
     ("openai-responses", "base URL https://api.openai.com/v1" +
      RESPONSES_WHY.format("gpt-5.2-codex"))),
    # not a reasoning model, or not OpenAI's own server: Chat Completions
    (AgentConfig(model="gpt-4.1"), {"OPENAI_API_KEY": "o"}, ("openai", "OPENAI_API_KEY is set")),
    (AgentConfig(model="gpt-5-chat-latest"), {"OPENAI_API_KEY": "o"},
     ("openai", "OPENAI_API_KEY is set")),
    (AgentConfig(model="gpt-5", base_url=OLLAMA), {}, ("openai", f"base URL {OLLAMA}")),
    (AgentConfig(model="gpt-5"), {"OPENAI_API_KEY": "o", "OPENAI_BASE_URL": OLLAMA},
     ("openai", "OPENAI_API_KEY is set")),
    (AgentConfig(model="o3", provider="openai"), {"OPENAI_API_KEY": "o"},  # chosen: kept
     ("openai", "configured; o3 is a reasoning model: provider openai-responses would keep "
                "its reasoning between turns")),
    (AgentConfig(model="o3", provider="openai", base_url=OLLAMA), {}, ("openai", "configured")),
])
def test_reasoning_models_at_openai_get_the_responses_api(
        agent: AgentConfig, env: dict[str, str], expected: tuple[str, str]) -> None:
    assert resolve_provider_name(agent, env) == expected


def test_responses_provider_is_built_like_openai() -> None:
    p = build_provider("openai-responses", AgentConfig(base_url=OLLAMA), Config(), {})
    assert isinstance(p, ResponsesProvider) and p.store is False
    assert (p.model, p._base_url) == ("gpt-5.4-mini", OLLAMA)
    with pytest.raises(ConfigError, match="set OPENAI_API_KEY"):
        build_provider("openai-responses", AgentConfig(), Config(), {})
    kept = Config(models={"gpt-5": ModelConfig(store=True)})
    p = build_provider("openai-responses", AgentConfig(model="gpt-5"), kept,
                       {"OPENAI_API_KEY": "o"})
    assert isinstance(p, ResponsesProvider) and p.store is True


def test_every_provider_answers_to_its_registry_name() -> None:
    env = {"ANTHROPIC_API_KEY": "ak", "OPENAI_API_KEY": "ok"}
    for name in REGISTRY:
        p = build_provider(name, AgentConfig(provider=name), Config(), env)
        assert p.name == name
        assert name in DEFAULT_MODELS


def test_cli_and_config_accept_the_registry_names() -> None:
    from rollchat.config.fields import PROVIDER, coerce

    assert tuple(REGISTRY) == PROVIDER_NAMES
    assert ("auto", *PROVIDER_NAMES) == PROVIDER_CHOICES
    assert all(coerce(PROVIDER, name)[0] for name in PROVIDER_CHOICES)
    assert not coerce(PROVIDER, "gemini")[0]
    env = {**os.environ, "COLUMNS": "200"}
    out = run_piped(Path.cwd(), None, "--help", env=env)
    assert out.returncode == 0, out.stderr
    assert f"--provider [{'|'.join(PROVIDER_CHOICES)}]" in out.stdout


def test_provider_names_are_spelled_only_in_providers_names() -> None:
    """AUTO is left out: "auto" is a common word (other settings may have an auto mode)."""
    src = Path(providers.__file__).parent.parent
    spelled = []
    for path in sorted(src.rglob("*.py")):
        if path == Path(providers.__file__).with_name("names.py"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and node.value in PROVIDER_NAMES:
                spelled.append(f"{path.relative_to(src)}:{node.lineno}: {node.value!r}")
    assert spelled == []


def test_build_anthropic_with_defaults() -> None:
    config = Config(retry=RetryConfig(request_timeout=9.0))
    p = build_provider("anthropic", AgentConfig(), config, {"ANTHROPIC_API_KEY": "ak"})
    assert isinstance(p, AnthropicProvider)
    assert (p.name, p.model, p._api_key, p._timeout) == ("anthropic", "claude-sonnet-5-5",
                                                          "ak", 9.0)


def test_build_openai_uses_agent_model_key_env_and_base_url() -> None:
    agent = AgentConfig(model="llama3", api_key_env="MY_KEY", base_url=OLLAMA)
    p = build_provider("openai", agent, Config(), {"MY_KEY": "mk", "OPENAI_API_KEY": "ok"})
    assert isinstance(p, OpenAIProvider)
    assert (p.model, p._api_key, p._base_url) == ("llama3", "mk", OLLAMA)


def test_build_openai_base_url_without_key() -> None:
    p = build_provider("openai", AgentConfig(base_url=OLLAMA), Config(), {})
    assert isinstance(p, OpenAIProvider)
    assert p._api_key is None
    assert p.model == "gpt-5.4-mini"


def test_build_auto_resolves_first() -> None:
    p = build_provider("auto", AgentConfig(), Config(), {"OPENAI_API_KEY": "ok"})
    assert isinstance(p, ResponsesProvider)  # its default model reasons, at OpenAI itself
    p = build_provider("auto", AgentConfig(base_url=OLLAMA), Config(), {"OPENAI_API_KEY": "ok"})
    assert isinstance(p, OpenAIProvider)


def test_build_offline_gets_word_delay() -> None:
    config = Config(ui=UIConfig(offline_word_delay=0.05))
    p = build_provider("offline", AgentConfig(), config, {"ANTHROPIC_API_KEY": "a"})
    assert p.name == "offline"
    assert getattr(p, "word_delay", None) == 0.05


@pytest.mark.parametrize(("name", "var"), [("anthropic", "ANTHROPIC_API_KEY"),
                                           ("openai", "OPENAI_API_KEY")])
def test_explicit_provider_without_key(name: str, var: str) -> None:
    with pytest.raises(ConfigError, match=f"set {var}") as info:
        build_provider(name, AgentConfig(provider=name), Config(), {})
    assert "\n" not in str(info.value)


def test_importing_providers_does_not_import_sdks() -> None:
    code = ("import rollchat.providers, rollchat.providers.sdk, rollchat.providers.openai, "
            "rollchat.providers.anthropic, sys; "
            "print('openai' in sys.modules, 'anthropic' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=60)
    assert out.stdout.split() == ["False", "False"]


def test_prefetch_imports_in_a_daemon_thread_once(monkeypatch: pytest.MonkeyPatch) -> None:
    imported: list[str] = []
    started: list[threading.Thread] = []
    real_start = threading.Thread.start

    def start(self: threading.Thread) -> None:
        started.append(self)
        real_start(self)

    monkeypatch.setattr(providers, "_prefetched", set())
    monkeypatch.setattr(providers.importlib, "import_module", imported.append)
    monkeypatch.setattr(threading.Thread, "start", start)
    prefetch_sdks("openai")
    prefetch_sdks("openai", "offline")
    for thread in started:
        thread.join(5)
    assert imported == ["openai"]
    assert len(started) == 1 and started[0].daemon
