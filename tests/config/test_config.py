"""Tests for the config loader: lookup, precedence, agents, validation messages, fuzzing."""

from __future__ import annotations

import dataclasses
import hashlib
import re
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rollchat.config.load import find_config_file, load_config
from rollchat.config.settings import (
    OFFLINE_WORD_DELAY,
    AgentConfig,
    Config,
    ConfigOverrides,
    ModelConfig,
    word_delay,
)
from rollchat.config.trust import record_trust
from rollchat.errors import ConfigError
from rollchat.providers.names import PROVIDER_CHOICES
from tests.examples_budget import examples

EXAMPLE = Path(__file__).resolve().parents[2] / "config.example.yml"


def load(
    tmp_path: Path,
    text: str | bytes | None = None,
    *,
    env: dict[str, str] | None = None,
    overrides: ConfigOverrides | None = None,
) -> Config:
    """Write ``text`` (if given) as ./rollchat.yml in tmp_path, trust it as `rollchat trust`
    does (tests/config/test_trust.py covers untrusted files), and load from there."""
    if text is not None:
        target = tmp_path / "rollchat.yml"
        if isinstance(text, bytes):
            target.write_bytes(text)
        else:
            target.write_text(text, encoding="utf-8")
        record_trust(target, hashlib.sha256(target.read_bytes()).hexdigest(),
                     tmp_path / "user-config")
    return load_config(
        config_path=None,
        env=env or {},
        cwd=tmp_path,
        overrides=overrides or ConfigOverrides(),
        user_config_dir=tmp_path / "user-config",
    )


def error(tmp_path: Path, text: str | bytes | None = None, **kwargs: object) -> str:
    with pytest.raises(ConfigError) as info:
        load(tmp_path, text, **kwargs)  # type: ignore[arg-type]
    message = str(info.value)
    assert "\n" not in message
    return message


# --- lookup -------------------------------------------------------------------------------


def test_no_file_gives_defaults_with_sessions_in_cwd(tmp_path: Path) -> None:
    config = load(tmp_path)
    assert config.source is None
    assert config.agent == AgentConfig()
    assert config.session.dir == tmp_path / "sessions"
    assert dataclasses.replace(config, session=Config().session) == Config()


def test_lookup_order(tmp_path: Path) -> None:
    user_dir = tmp_path / "user"
    user_dir.mkdir()
    (user_dir / "config.yml").write_text("agents: {user: {}}\n")
    assert find_config_file(None, {}, tmp_path, user_dir) == user_dir / "config.yml"
    (tmp_path / "rollchat.yml").write_text("agents: {local: {}}\n")
    assert find_config_file(None, {}, tmp_path, user_dir) == tmp_path / "rollchat.yml"
    (tmp_path / "env.yml").write_text("agents: {env: {}}\n")
    env = {"ROLLCHAT_CONFIG": "env.yml"}
    assert find_config_file(None, env, tmp_path, user_dir) == tmp_path / "env.yml"
    (tmp_path / "flag.yml").write_text("agents: {flag: {}}\n")
    assert find_config_file(Path("flag.yml"), env, tmp_path, user_dir) == tmp_path / "flag.yml"
    config = load_config(config_path=None, env=env, cwd=tmp_path, user_config_dir=user_dir)
    assert config.default_agent == "env" and config.source == tmp_path / "env.yml"


def test_no_file_anywhere_is_none(tmp_path: Path) -> None:
    assert find_config_file(None, {"ROLLCHAT_CONFIG": ""}, tmp_path, tmp_path / "u") is None


def test_named_files_must_exist(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"^--config: no such file: missing\.yml$"):
        load_config(config_path=Path("missing.yml"), env={}, cwd=tmp_path,
                    user_config_dir=tmp_path / "u")
    with pytest.raises(ConfigError, match=r"^\$ROLLCHAT_CONFIG: no such file: nope\.yml$"):
        load_config(config_path=None, env={"ROLLCHAT_CONFIG": "nope.yml"}, cwd=tmp_path,
                    user_config_dir=tmp_path / "u")


def test_directory_as_config_path(tmp_path: Path) -> None:
    (tmp_path / "conf").mkdir()
    with pytest.raises(ConfigError, match="conf: is a directory"):
        load_config(config_path=Path("conf"), env={}, cwd=tmp_path,
                    user_config_dir=tmp_path / "u")


# --- precedence ---------------------------------------------------------------------------

FILE = """\
agents:
  assistant:
    provider: offline
    model: file-model
  coder:
    provider: anthropic
    base_url: http://file.example/v1
session:
  dir: file-sessions
"""


def test_file_then_env_then_flags(tmp_path: Path) -> None:
    config = load(tmp_path, FILE)
    assert (config.agent.provider, config.agent.model) == ("offline", "file-model")
    assert config.session.dir == tmp_path / "file-sessions"
    env = {"ROLLCHAT_PROVIDER": "openai", "ROLLCHAT_MODEL": "env-model",
           "ROLLCHAT_BASE_URL": "http://env.example/v1", "ROLLCHAT_SESSIONS_DIR": "env-s"}
    config = load(tmp_path, env=env)
    assert (config.agent.provider, config.agent.model) == ("openai", "env-model")
    assert config.agent.base_url == "http://env.example/v1"
    assert config.session.dir == tmp_path / "env-s"
    flags = ConfigOverrides(provider="anthropic", model="flag-model", base_url="https://flag/v1",
                            sessions_dir=tmp_path / "abs")
    config = load(tmp_path, env=env, overrides=flags)
    assert (config.agent.provider, config.agent.model) == ("anthropic", "flag-model")
    assert config.agent.base_url == "https://flag/v1"
    assert config.session.dir == tmp_path / "abs"
    config = load(tmp_path, overrides=ConfigOverrides(sessions_dir=Path("rel")))
    assert config.session.dir == tmp_path / "rel"


def test_overrides_apply_to_the_chosen_agent_only(tmp_path: Path) -> None:
    config = load(tmp_path, FILE, env={"ROLLCHAT_AGENT": "coder", "ROLLCHAT_MODEL": "m1"})
    assert config.default_agent == "coder" and config.agent.key == "coder"
    assert config.agent.model == "m1" and config.agent.provider == "anthropic"
    assert config.agents["assistant"].model == "file-model"
    config = load(tmp_path, env={"ROLLCHAT_AGENT": "coder"},
                  overrides=ConfigOverrides(agent="assistant", provider="openai"))
    assert config.agent.key == "assistant" and config.agent.provider == "openai"
    assert config.agents["coder"].provider == "anthropic"


def test_empty_environment_values_count_as_unset(tmp_path: Path) -> None:
    config = load(tmp_path, FILE, env={"ROLLCHAT_MODEL": "", "ROLLCHAT_PROVIDER": ""})
    assert config.agent.model == "file-model" and config.agent.provider == "offline"


def test_relative_session_dir_is_relative_to_cwd_not_the_file(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "c.yml").write_text("session: {dir: project-sessions}\n")
    cwd = tmp_path / "project"
    cwd.mkdir()
    config = load_config(config_path=elsewhere / "c.yml", env={}, cwd=cwd,
                         user_config_dir=tmp_path / "u")
    assert config.session.dir == cwd / "project-sessions"
    assert config.source == elsewhere / "c.yml"


def test_no_save_turns_auto_save_off(tmp_path: Path) -> None:
    assert load(tmp_path).session.auto_save is True
    assert load(tmp_path, overrides=ConfigOverrides(no_save=True)).session.auto_save is False
    assert load(tmp_path, "session: {auto_save: false}\n").session.auto_save is False


def test_the_offline_word_delay_streams_only_where_someone_watches(tmp_path: Path) -> None:
    unset = load(tmp_path).ui
    assert unset.offline_word_delay is None
    assert word_delay(unset, terminal=True) == OFFLINE_WORD_DELAY > 0
    assert word_delay(unset, terminal=False) == 0.0  # piped: a script never waits for it
    for text in ("ui: {offline_word_delay: 0.1}\n", "ui: {offline_word_delay: 0}\n"):
        set_ = load(tmp_path, text).ui
        assert word_delay(set_, terminal=True) == word_delay(set_, terminal=False) \
            == set_.offline_word_delay  # as configured, everywhere
    assert load(tmp_path, "ui: {offline_word_delay: null}\n").ui.offline_word_delay is None


def test_bad_environment_and_flag_values_name_their_source(tmp_path: Path) -> None:
    message = error(tmp_path, env={"ROLLCHAT_PROVIDER": "bogus"})
    assert message == ("$ROLLCHAT_PROVIDER: must be one of auto, anthropic, openai, "
                       "openai-responses, offline (got 'bogus')")
    assert error(tmp_path, env={"ROLLCHAT_BASE_URL": "localhost:8080"}).startswith(
        "$ROLLCHAT_BASE_URL: must be an http:// or https:// URL")
    assert error(tmp_path, overrides=ConfigOverrides(provider="gemini")).startswith(
        "--provider: must be one of")
    assert error(tmp_path, overrides=ConfigOverrides(model=" ")).startswith("--model:")


# --- agents -------------------------------------------------------------------------------


def test_agents_merge_over_defaults_and_first_is_default(tmp_path: Path) -> None:
    config = load(tmp_path, "agents:\n  code-reviewer:\n    temperature: 0.2\n  other: {}\n")
    assert list(config.agents) == ["code-reviewer", "other"]
    assert config.default_agent == "code-reviewer"
    assert config.agent == AgentConfig(key="code-reviewer", name="Code Reviewer",
                                       temperature=0.2)
    assert load(tmp_path, "default_agent: other\n" + "agents: {x: {}, other: {}}\n"
                ).agent.key == "other"


def test_unknown_agent_names_list_the_known_ones(tmp_path: Path) -> None:
    (tmp_path / "rollchat.yml").write_text("agents: {a: {}, b: {}}\n")
    assert error(tmp_path, overrides=ConfigOverrides(agent="c")) == (
        "--agent: unknown agent 'c'; known agents: a, b")
    assert error(tmp_path, env={"ROLLCHAT_AGENT": "zz"}).startswith("$ROLLCHAT_AGENT: unknown")
    assert error(tmp_path, "agents: {a: {}}\ndefault_agent: b\n") == (
        "rollchat.yml:2: default_agent: unknown agent 'b'; known agents: a")
    assert error(tmp_path, "default_agent: coder\n") == (
        "rollchat.yml:1: default_agent: unknown agent 'coder'; known agents: assistant")


def test_system_prompt_file_is_read_relative_to_the_config_file(tmp_path: Path) -> None:
    conf_dir = tmp_path / "conf"
    (conf_dir / "prompts").mkdir(parents=True)
    (conf_dir / "prompts" / "p.md").write_text("Be terse.\n", encoding="utf-8")
    (conf_dir / "c.yml").write_text("agents:\n  a:\n    system_prompt_file: prompts/p.md\n")
    config = load_config(config_path=conf_dir / "c.yml", env={}, cwd=tmp_path,
                         user_config_dir=tmp_path / "u")
    assert config.agent.system_prompt == "Be terse."
    assert config.agent.system_prompt_file == conf_dir / "prompts" / "p.md"


def test_system_prompt_file_errors(tmp_path: Path) -> None:
    text = "agents:\n  a:\n    system_prompt_file: missing.md\n"
    message = error(tmp_path, text)
    assert message.startswith("rollchat.yml:3: agents.a.system_prompt_file: cannot read ")
    assert str(tmp_path / "missing.md") in message
    (tmp_path / "bad.md").write_bytes(b"\xff\xfe bad")
    assert error(tmp_path, text.replace("missing", "bad")).endswith("bad.md is not valid UTF-8")
    both = "agents:\n  a:\n    system_prompt: hi\n    system_prompt_file: bad.md\n"
    assert error(tmp_path, both) == (
        "rollchat.yml:4: agents.a: set system_prompt or system_prompt_file, not both")


def test_anchors_and_merge_keys_work(tmp_path: Path) -> None:
    text = ("agents:\n  base: &b {provider: offline, max_output_tokens: 100}\n"
            "  derived:\n    <<: *b\n    max_output_tokens: 200\n")
    config = load(tmp_path, text)
    assert config.agents["derived"].provider == "offline"
    assert config.agents["derived"].max_output_tokens == 200


def test_tools_section(tmp_path: Path) -> None:
    assert load(tmp_path).tools.max_result_tokens is None  # a tenth of the window
    config = load(tmp_path, "tools:\n  max_result_tokens: 2500\n")
    assert config.tools.max_result_tokens == 2500
    assert load(tmp_path, "tools: {max_result_tokens: null}\n").tools.max_result_tokens is None


def test_models_section(tmp_path: Path) -> None:
    config = load(tmp_path, "models:\n  llama3:8b:\n    context_window: 8192\n")
    assert config.models == {"llama3:8b": ModelConfig(context_window=8192)}
    assert config.context_window_override("llama3:8b") == 8192
    assert config.context_window_override("other") is None
    assert error(tmp_path, "models:\n  m: {}\n") == (
        "rollchat.yml:2: models.m: set context_window, price, images or store")
    config = load(tmp_path, "models:\n  gpt-5:\n    store: true\n")
    assert (config.store_for("gpt-5"), config.store_for("o3")) == (True, False)


# --- validation messages ------------------------------------------------------------------


@pytest.mark.parametrize(("text", "expected"), [
    ("session:\n  dir: x\n  compact_threshold: 1.5\n",
     "rollchat.yml:3: session.compact_threshold: must be a number between 0 and 1 (got 1.5)"),
    ("session: {compact_threshold: 0}\n", "rollchat.yml:1: session.compact_threshold: must"),
    ("session: {compact_threshold: .nan}\n", "session.compact_threshold: must be a number"),
    ("agents:\n  a:\n    max_output_tokens: true\n",
     "rollchat.yml:3: agents.a.max_output_tokens: must be a positive integer (got true)"),
    ("agents: {a: {max_output_tokens: 0}}\n", "agents.a.max_output_tokens: must be a positive"),
    ("agents: {a: {max_output_tokens: '100'}}\n", "must be a positive integer (got '100')"),
    ("agents: {a: {temperature: 2.5}}\n", "agents.a.temperature: must be a number from 0 to 2"),
    ("agents: {a: {provider: gemini}}\n", "agents.a.provider: must be one of auto, anthropic"),
    ("agents: {a: {base_url: 'localhost:1234'}}\n", "agents.a.base_url: must be an http://"),
    ("agents: {a: {name: [x]}}\n", "agents.a.name: must be a non-empty string (got a list)"),
    ("agents: {a: {name: null}}\n", "agents.a.name: must be a non-empty string (got null)"),
    ("agents: {'a b': {}}\n", "rollchat.yml:1: agents.a b: agent names are 1-64 letters"),
    ("models: {m: {context_window: 1000}}\n",
     "models.m.context_window: must be an integer >= 1024 (got 1000)"),
    ("models: {m: {context_window: 8192.0}}\n", "models.m.context_window: must be an integer"),
    ("session: {keep_recent_turns: -1}\n", "session.keep_recent_turns: must be an integer >= 0"),
    ("session: {safety_margin_tokens: -5}\n", "session.safety_margin_tokens: must be an"),
    ("session: {auto_save: maybe}\n", "session.auto_save: must be true or false (got 'maybe')"),
    ("summary: {timeout_seconds: 0}\n", "summary.timeout_seconds: must be a number of seconds > 0"),
    ("summary: {provider: bogus}\n", "summary.provider: must be one of"),
    ("summary: {max_words: -1}\n", "summary.max_words: must be a positive integer"),
    ("retry: {max_retries: -1}\n", "retry.max_retries: must be an integer >= 0 (got -1)"),
    ("retry: {request_timeout: 0}\n", "retry.request_timeout: must be a number of seconds > 0"),
    ("retry:\n  base_delay: 5\n  max_delay: 2\n",
     "rollchat.yml:3: retry.max_delay: must be >= retry.base_delay (got 2.0 < 5.0)"),
    ("ui: {offline_word_delay: -1}\n", "ui.offline_word_delay: must be a number of seconds"),
    ("tools:\n  max_result_tokens: 50\n",
     "rollchat.yml:2: tools.max_result_tokens: must be an integer >= 100, or null (a tenth of "
     "the context window) (got 50)"),
    ("tools: {max_result_tokens: 2.5}\n", "tools.max_result_tokens: must be an integer"),
    ("tools: {max_result_token: 500}\n", "tools.max_result_token: unknown key (did you mean"),
    ("session: [1, 2]\n", "rollchat.yml:1: session: must be a mapping (got a list)"),
    ("sesion: {}\n", "rollchat.yml:1: sesion: unknown key (did you mean 'session'?)"),
    ("session:\n  compact_treshold: 0.5\n",
     "rollchat.yml:2: session.compact_treshold: unknown key (did you mean 'compact_threshold'?)"),
    ("agents: {a: {modle: x}}\n", "agents.a.modle: unknown key (did you mean 'model'?)"),
    ("session: {}\nsession: {}\n", "rollchat.yml:2: session: duplicate key (first set on line 1)"),
    ("agents: {a: {model: !!python/object:os.system x}}\n", "rollchat.yml:1: agents.a.model: "),
    ("session: {dir: 2020-13-45}\n", "rollchat.yml:1: session.dir: must be a directory path"),
    ("agents:\n  a:\n    - x\n", "rollchat.yml:3: agents.a: must be a mapping (got a list)"),
])
def test_validation_messages(tmp_path: Path, text: str, expected: str) -> None:
    message = error(tmp_path, text)
    assert message.startswith(expected) if expected.startswith("rollchat.yml") else (
        expected in message), message
    assert re.match(r"rollchat\.yml:\d+: ", message), message


def test_an_int_is_accepted_for_a_float(tmp_path: Path) -> None:
    config = load(tmp_path, "summary: {timeout_seconds: 5}\nagents: {a: {temperature: 0}}\n")
    assert config.summary.timeout_seconds == 5.0
    assert isinstance(config.summary.timeout_seconds, float)
    assert config.agent.temperature == 0.0


@pytest.mark.parametrize("key", ["api_key", "anthropic_api_key", "OPENAI_API_KEY", "apiKey",
                                 "token", "secret"])
def test_api_keys_in_the_file_are_rejected_with_a_hint(tmp_path: Path, key: str) -> None:
    message = error(tmp_path, f"agents:\n  a:\n    {key}: sk-live-123456\n")
    assert message.startswith(f"rollchat.yml:3: agents.a.{key}: unknown key; API keys")
    assert "ANTHROPIC_API_KEY" in message and "api_key_env" in message
    assert "sk-live" not in message
    assert "API keys" in error(tmp_path, "api_key: sk-live-1\n")


def test_token_settings_are_not_mistaken_for_secrets(tmp_path: Path) -> None:
    message = error(tmp_path, "session: {max_output_tokens: 5}\n")
    assert "API keys" not in message and "unknown key" in message


def test_a_key_given_as_api_key_env_is_not_echoed(tmp_path: Path) -> None:
    message = error(tmp_path, "agents: {a: {api_key_env: sk-ant-secret-value}}\n")
    assert "agents.a.api_key_env: must be the NAME of an environment variable" in message
    assert "secret-value" not in message
    assert load(tmp_path, "agents: {a: {api_key_env: MY_KEY}}\n").agent.api_key_env == "MY_KEY"


# --- file format --------------------------------------------------------------------------


def test_invalid_yaml_names_the_line(tmp_path: Path) -> None:
    message = error(tmp_path, "session:\n  dir: x\n  auto_save: [true\nui: {}\n")
    assert re.match(r"rollchat\.yml:[34]: invalid YAML: ", message), message


@pytest.mark.parametrize("text", ["", "\n\n", "# only a comment\n", "~\n", "---\n"])
def test_empty_documents_give_defaults(tmp_path: Path, text: str) -> None:
    config = load(tmp_path, text)
    assert config.source == tmp_path / "rollchat.yml"
    (tmp_path / "rollchat.yml").unlink()
    assert dataclasses.replace(config, source=None, source_sha256=None) == load(tmp_path)


@pytest.mark.parametrize("text", ["- a\n- b\n", "just text\n", "42\n"])
def test_top_level_must_be_a_mapping(tmp_path: Path, text: str) -> None:
    assert error(tmp_path, text).startswith(
        "rollchat.yml:1: the top level must be a mapping of settings")


def test_non_utf8_file(tmp_path: Path) -> None:
    assert error(tmp_path, b"session:\n  dir: caf\xe9\n") == (
        "rollchat.yml:2: not valid UTF-8 (byte 0xe9); save the file as UTF-8")


def test_control_characters_huge_files_and_deep_nesting(tmp_path: Path) -> None:
    assert error(tmp_path, "session:\n  dir: a\x00b\n").startswith("rollchat.yml:2: invalid YAML")
    assert "too large" in error(tmp_path, "#" * (1024 * 1024 + 10))
    deep = "session:\n  dir: " + "[" * 5000 + "]" * 5000 + "\n"
    assert error(tmp_path, deep) == "rollchat.yml:2: nested more than 32 levels deep"


def test_utf8_bom_is_accepted(tmp_path: Path) -> None:
    assert load(tmp_path, b"\xef\xbb\xbfsession: {dir: s}\n").session.dir == tmp_path / "s"


# --- the example file ---------------------------------------------------------------------


def test_example_file_loads_and_equals_the_defaults(tmp_path: Path) -> None:
    config = load_config(config_path=EXAMPLE, env={}, cwd=tmp_path,
                         user_config_dir=tmp_path / "u")
    defaults = load(tmp_path)
    digest = hashlib.sha256(EXAMPLE.read_bytes()).hexdigest()
    assert config == dataclasses.replace(defaults, source=EXAMPLE, source_sha256=digest)


def test_example_file_documents_every_key() -> None:
    text = EXAMPLE.read_text(encoding="utf-8")
    defaults = Config()
    for section in (AgentConfig(), defaults.session, defaults.summary, defaults.retry,
                    defaults.ui, defaults.tools, defaults.memory, defaults.handoff,
                    defaults.instructions):
        for f in dataclasses.fields(section):
            if f.name != "key" and not f.metadata.get("derived"):  # not keys of the file
                assert re.search(rf"^\s+{f.name}:", text, re.M), f.name
    assert "context_window" in text and "default_agent:" in text


def test_example_file_commented_examples_are_valid(tmp_path: Path) -> None:
    lines = []
    for line in EXAMPLE.read_text(encoding="utf-8").splitlines():
        if re.match(r"^  # (  )?[a-z0-9_.:-]+:( |$)", line):
            line = line.replace("# ", "", 1)
        lines.append(line.replace("models: {}", "models:"))
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "coder.md").write_text("Write code.")
    config = load(tmp_path, "\n".join(lines), overrides=ConfigOverrides(agent="coder"))
    assert config.agent.system_prompt == "Write code."
    assert config.agent.base_url == "http://localhost:11434/v1"
    assert config.context_window_override("qwen2.5-coder:7b") == 32768


# --- fuzzing ------------------------------------------------------------------------------

_FUZZ = settings(max_examples=examples(300), deadline=None,
                 suppress_health_check=[HealthCheck.function_scoped_fixture])


def _load_or_config_error(tmp_path: Path, data: str | bytes) -> None:
    try:
        load(tmp_path, data)
    except ConfigError as exc:
        assert str(exc).startswith("rollchat.yml"), str(exc)


@_FUZZ
@given(st.text(max_size=300))
def test_fuzz_text(tmp_path: Path, text: str) -> None:
    _load_or_config_error(tmp_path, text)


@_FUZZ
@given(st.binary(max_size=300))
def test_fuzz_bytes(tmp_path: Path, data: bytes) -> None:
    _load_or_config_error(tmp_path, data)


_KEYS = ["default_agent", "agents", "models", "session", "summary", "retry", "ui", "assistant",
         "name", "provider", "model", "base_url", "api_key_env", "system_prompt",
         "system_prompt_file", "max_output_tokens", "temperature", "context_window", "dir",
         "auto_save", "compact_threshold", "keep_recent_turns", "max_words", "max_delay",
         "history_file", "offline_word_delay", "<<", "api_key"]
_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20)
    | st.sampled_from([*PROVIDER_CHOICES, "http://x/v1", "a.md", "..", "/"]),
    lambda inner: st.lists(inner, max_size=3)
    | st.dictionaries(st.sampled_from(_KEYS) | st.text(max_size=5), inner, max_size=4),
    max_leaves=20,
)


@_FUZZ
@given(st.dictionaries(st.sampled_from(_KEYS), _VALUES, max_size=5))
def test_fuzz_structured_yaml(tmp_path: Path, document: dict[str, object]) -> None:
    _load_or_config_error(tmp_path, yaml.safe_dump(document, allow_unicode=True))
