"""Hostile config files: merge-key and alias bombs, too many values, self-merging mappings and
huge files are refused with one line naming the file and the line, before anything is expanded
(memory measured with tracemalloc: a few MB, where the 444-byte bomb used to take 1 GB)."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import pytest

from rollchat.config.load import load_config
from rollchat.config.settings import ConfigOverrides
from rollchat.config.yamlfile import MAX_ALIASES, MAX_MERGED, MAX_NODES
from rollchat.errors import ConfigError
from tests.e2e import clean_env, run_piped


def merge_bomb(width: int = 9, levels: int = 8) -> str:
    """Each level merges the one before ``width`` times: ``width ** levels`` entries once
    flattened (43 million for 9 and 8), from about 500 bytes."""
    lines = ["a0: &a0 {" + ", ".join(f"k{i}: 1" for i in range(width)) + "}"]
    for level in range(1, levels):
        refs = ", ".join([f"*a{level - 1}"] * width)
        lines.append(f"a{level}: &a{level} {{<<: [{refs}]}}")
    lines.append(f"<<: *a{levels - 1}")
    return "\n".join(lines) + "\n"


def load_error(tmp_path: Path, text: str) -> str:
    path = tmp_path / "hostile.yml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_config(config_path=path, env={}, cwd=tmp_path, overrides=ConfigOverrides(),
                    user_config_dir=tmp_path / "user-config")
    message = str(info.value)
    assert "\n" not in message
    return message


def test_merge_key_bomb_is_refused_before_it_expands(tmp_path: Path) -> None:
    bomb = merge_bomb()
    assert len(bomb.encode()) < 600
    tracemalloc.start()
    try:
        message = load_error(tmp_path, bomb)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert message == (f"hostile.yml:4: merge keys (<<) expand to more than {MAX_MERGED:,} "
                       "settings; a config file needs far fewer: write the settings out or "
                       "merge less")
    assert peak < 20 * 1024 * 1024, f"{peak:,} bytes used to refuse the bomb"


def test_merges_of_a_reasonable_size_still_work(tmp_path: Path) -> None:
    base = "base: &b {provider: offline, max_output_tokens: 100, temperature: 0.5}\n"
    agents = "".join(f"  a{i}:\n    <<: *b\n    name: Agent {i}\n" for i in range(20))
    path = tmp_path / "ok.yml"
    path.write_text("agents:\n  " + base + agents, encoding="utf-8")
    config = load_config(config_path=path, env={}, cwd=tmp_path,
                         user_config_dir=tmp_path / "user-config")
    assert config.agents["a19"].max_output_tokens == 100
    assert config.agents["a19"].name == "Agent 19"


def test_a_mapping_that_merges_itself(tmp_path: Path) -> None:
    assert load_error(tmp_path, "x: 1\nagents: &a\n  <<: *a\n") == (
        "hostile.yml:2: a merge key (<<) includes the mapping it is in; remove that merge")


def test_too_many_aliases(tmp_path: Path) -> None:
    refs = ", ".join(["*v"] * (MAX_ALIASES + 1))
    assert load_error(tmp_path, f"v: &v 1\nw: [{refs}]\n") == (
        f"hostile.yml:2: more than {MAX_ALIASES} aliases (*name); a config file needs only a "
        "few: write the settings out")


def test_alias_bomb_of_lists(tmp_path: Path) -> None:
    """The billion-laughs shape (lists of lists): refused by the alias count at once."""
    lines = ["l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    lines += [f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 9) + "]" for i in range(1, 13)]
    message = load_error(tmp_path, "\n".join(lines) + "\n")
    assert message.startswith("hostile.yml:13: more than 100 aliases"), message


def test_too_many_values(tmp_path: Path) -> None:
    text = "session:\n  dir: [" + ", ".join("x" * 2 for _ in range(MAX_NODES)) + "]\n"
    assert load_error(tmp_path, text) == (
        f"hostile.yml:2: more than {MAX_NODES:,} values; a config file needs a few hundred "
        "at most")


def test_files_over_the_size_cap(tmp_path: Path) -> None:
    message = load_error(tmp_path, "# padding\n" * 30_000)
    assert message == ("hostile.yml: too large for a config file (limit 256 KiB); put a long "
                       "system prompt in system_prompt_file")


def test_the_cli_refuses_the_bomb_with_one_line_and_status_2(tmp_path: Path) -> None:
    (tmp_path / "bomb.yml").write_text(merge_bomb(), encoding="utf-8")
    env = clean_env(tmp_path / "home")
    for args in (("--config", "bomb.yml"), ("sessions", "--config", "bomb.yml")):
        done = run_piped(tmp_path, "hello\n", *args, env=env)
        assert done.returncode == 2, done
        assert done.stderr == ("rollchat: error: bomb.yml:4: merge keys (<<) expand to more "
                               f"than {MAX_MERGED:,} settings; a config file needs far fewer: "
                               "write the settings out or merge less\n")
        assert done.stdout == ""
