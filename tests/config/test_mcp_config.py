"""MCP server settings: where they come from (top level, agent, .mcp.json), how they merge,
what is checked when the file is read, and ``${VAR}`` expansion when a server starts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rollchat.config.load import load_config
from rollchat.config.mcp_servers import McpServerConfig, expand
from rollchat.errors import ConfigError


def load(tmp_path: Path, text: str, agent: str | None = None) -> tuple[McpServerConfig, ...]:
    path = tmp_path / "c.yml"
    path.write_text(text, encoding="utf-8")
    env = {"ROLLCHAT_AGENT": agent} if agent else {}
    config = load_config(config_path=path, env=env, cwd=tmp_path,
                         user_config_dir=tmp_path / "user")
    return config.agent_mcp_servers


def test_top_level_servers_then_the_agents_own_which_replace_by_name(tmp_path: Path) -> None:
    (tmp_path / "tools").mkdir()
    text = """\
mcp_servers:
  a: {command: one, args: [x, "${Y:-z}"], cwd: tools}
  b: {url: "http://127.0.0.1:1/mcp", include_tools: [t1], exclude_tools: [t2],
      startup_timeout: 3, call_timeout: 7}
agents:
  helper:
    mcp_servers:
      a: {command: two}
      c: {type: stdio, command: three, env: {MODE: fast, API_KEY: "${MY_KEY}"}}
  plain: {}
"""
    servers = load(tmp_path, text, "helper")
    assert [(s.name, s.transport) for s in servers] == [("a", "stdio"), ("b", "http"),
                                                        ("c", "stdio")]
    assert servers[0].command == "two" and servers[2].env == (("MODE", "fast"),
                                                              ("API_KEY", "${MY_KEY}"))
    b = servers[1]
    assert (b.include_tools, b.exclude_tools, b.startup_timeout, b.call_timeout) == (
        ("t1",), ("t2",), 3.0, 7.0)
    plain = load(tmp_path, text, "plain")
    assert plain[0].command == "one" and plain[0].args == ("x", "${Y:-z}")
    assert plain[0].cwd == tmp_path / "tools"
    assert [s.name for s in plain] == ["a", "b"]


def test_defaults_are_thirty_seconds_to_start_and_sixty_a_call(tmp_path: Path) -> None:
    (server,) = load(tmp_path, "mcp_servers:\n  a: {command: x}\n")
    assert (server.startup_timeout, server.call_timeout) == (30.0, 60.0)
    assert server.held is None


def test_npx_and_uvx_get_the_time_a_first_download_needs(tmp_path: Path) -> None:
    servers = load(tmp_path, "mcp_servers:\n  n: {command: npx, args: [-y, pkg]}\n"
                   "  u: {command: /usr/local/bin/uvx, args: [mcp-server-time]}\n"
                   "  own: {command: npx, startup_timeout: 10}\n")
    assert [s.startup_timeout for s in servers] == [120.0, 120.0, 10.0]


def test_an_mcp_json_file_and_inline_servers(tmp_path: Path) -> None:
    (tmp_path / "m.json").write_text(json.dumps({"mcpServers": {
        "gh": {"command": "npx", "args": ["-y", "server-github"],
               "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "${GITHUB_TOKEN}"}},
        "web": {"type": "http", "url": "https://mcp.example.com/mcp",
                "headers": {"Authorization": "Bearer ${WEB_TOKEN}"}},
    }}))
    servers = load(tmp_path, "mcp_servers_file: m.json\nmcp_servers:\n  web: {command: w}\n")
    assert [(s.name, s.transport, s.command) for s in servers] == [
        ("gh", "stdio", "npx"), ("web", "stdio", "w")]


@pytest.mark.parametrize(("document", "expected"), [
    ({"mcpServers": {"x": {"command": "a", "timeout": 5}}},
     "mcpServers.x.timeout: unknown key"),
    ({"mcpServers": {"x": {"type": "ws", "url": "ws://h"}}}, "mcpServers.x.type: must be"),
    ({"mcpServers": {"x y": {"command": "a"}}}, "server names are"),
    ({"servers": {}}, 'has no "mcpServers" mapping'),
    ({"mcpServers": {"x": {"command": "a", "env": {"TOKEN": "ghp_literal"}}}},
     "mcpServers.x.env.TOKEN: holds a literal value that looks like a secret"),
])
def test_a_bad_mcp_json_names_the_file_and_the_server(tmp_path: Path, document: object,
                                                      expected: str) -> None:
    (tmp_path / "m.json").write_text(json.dumps(document))
    with pytest.raises(ConfigError, match=r"c\.yml:1: mcp_servers_file: ") as caught:
        load(tmp_path, "mcp_servers_file: m.json\n")
    assert expected in str(caught.value)


def test_not_json_is_one_clear_error(tmp_path: Path) -> None:
    (tmp_path / "m.json").write_text("{nope")
    with pytest.raises(ConfigError, match="is not valid JSON"):
        load(tmp_path, "mcp_servers_file: m.json\n")


def test_expansion() -> None:
    env = {"A": "1", "EMPTY": ""}
    assert expand("x${A}y${B:-two}${EMPTY:-d}$HOME", env, "s") == "x1ytwod$HOME"
    with pytest.raises(ConfigError, match=r"\$\{B\} is not set in the environment"):
        expand("${B}", env, "s")
    assert expand("${EMPTY}", env, "s") == ""


def test_an_untrusted_project_file_holds_its_servers(tmp_path: Path) -> None:
    (tmp_path / "rollchat.yml").write_text(
        "mcp_servers:\n  a: {command: x}\nmcp_servers_file: missing.json\n")
    config = load_config(config_path=None, env={}, cwd=tmp_path,
                         user_config_dir=tmp_path / "user")
    (server,) = config.agent_mcp_servers  # the missing file is not even read
    assert server.held == "rollchat.yml is not trusted; run `rollchat trust` to start it"
    assert config.ignored_settings == ("mcp_servers_file", "mcp_servers")
    assert config.trust_notice is not None and "start MCP servers" in config.trust_notice


def test_servers_reach_an_agent_through_a_merge_key(tmp_path: Path) -> None:
    text = """\
agents:
  base: &base
    max_output_tokens: 100
    mcp_servers:
      a: {command: x}
  derived:
    <<: *base
    name: Derived
"""
    servers = load(tmp_path, text, "derived")
    assert [s.command for s in servers] == ["x"]
