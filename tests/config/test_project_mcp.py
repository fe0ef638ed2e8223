"""Issue 35 item 5 (one piece): a project's ``.mcp.json`` (Claude Code's MCP servers file) in a
project not trusted is named in one line with the command that trusts it (it was ignored
without a word); once ``rollchat trust .mcp.json`` recorded it, its servers start (a real MCP
server: examples/mcp/notes_server.py); a change makes it untrusted again."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.e2e import clean_env, run_piped
from tests.mcp_helpers import NOTES_SERVER

LINE = (".mcp.json (MCP servers: notes) is not trusted, so none of its servers starts; if you "
        "trust the file, run `rollchat trust .mcp.json`")


def test_an_untrusted_mcp_json_is_named_and_starts_once_trusted(tmp_path: Path) -> None:
    project, home = tmp_path / "p", tmp_path / "home"
    project.mkdir()
    servers = project / ".mcp.json"
    servers.write_text(json.dumps({"mcpServers": {"notes": {
        "command": sys.executable, "args": [str(NOTES_SERVER)]}}}), encoding="utf-8")
    env = clean_env(home)
    done = run_piped(project, "tools\nexit\n", env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines().count(f"Warning: {LINE}") == 1, done.stdout
    assert "mcp__notes__" not in done.stdout

    trusted = run_piped(project, None, "trust", ".mcp.json", env=env)
    assert trusted.returncode == 0, trusted.stderr
    assert trusted.stdout.startswith("Trusted .mcp.json: its MCP servers (notes) now start ")
    # (a message waits for the servers starting: then `tools` lists theirs)
    done = run_piped(project, "hello\ntools\nexit\n", env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "mcp__notes__add_note" in done.stdout and "not trusted" not in done.stdout

    servers.write_text(servers.read_text() + "\n", encoding="utf-8")
    done = run_piped(project, "tools\nexit\n", env=env)
    assert ("Warning: .mcp.json (MCP servers: notes) changed since you trusted it, so none of "
            "its servers starts; if you trust the file, run `rollchat trust .mcp.json`"
            ) in done.stdout.splitlines()
    assert "mcp__notes__" not in done.stdout


def test_a_broken_mcp_json_is_still_named_and_trust_refuses_it(tmp_path: Path) -> None:
    project, home = tmp_path / "p", tmp_path / "home"
    project.mkdir()
    (project / ".mcp.json").write_text("{oops", encoding="utf-8")
    env = clean_env(home)
    done = run_piped(project, "exit\n", env=env)
    assert ("Warning: .mcp.json is not trusted, so none of its servers starts; if you trust "
            "the file, run `rollchat trust .mcp.json`") in done.stdout.splitlines()
    trusted = run_piped(project, None, "trust", ".mcp.json", env=env)
    assert trusted.returncode == 2 and "is not valid JSON" in trusted.stderr
    assert not (home / "config" / "rollchat" / "trusted.json").exists()
