"""``rollchat mcp`` answers every malformed input, as a client would send it on the real
process's stdin, with the JSON-RPC error the spec names, in rollchat's words (no pydantic text,
no URLs), and refuses what pydantic would coerce (``limit: true``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from tests.compact_fixtures import OFFLINE_CONFIG
from tests.e2e import PYCACHE, user_dirs

INIT = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {},
    "clientInfo": {"name": "test", "version": "1"}}}


def call(request_id: int, arguments: Any, name: str = "list_sessions") -> str:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
                       "params": {"name": name, "arguments": arguments}})


def answers(tmp_path: Path, lines: list[str]) -> dict[Any, dict[str, Any]]:
    """The answers of a real ``rollchat mcp`` to ``lines`` (after initialize), by id."""
    home = tmp_path / "home"
    home.mkdir()
    config = tmp_path / "c.yml"
    config.write_text(OFFLINE_CONFIG, encoding="utf-8")
    (tmp_path / "s").mkdir()
    env = {**user_dirs(home), "PYTHONPATH": os.pathsep.join(sys.path),
           "PYTHONPYCACHEPREFIX": str(PYCACHE), "PATH": os.environ.get("PATH", "")}
    initialized = json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"})
    process = subprocess.Popen(
        [sys.executable, "-m", "rollchat", "mcp", "--sessions-dir", str(tmp_path / "s"),
         "--config", str(config)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL, text=True, env=env, cwd=tmp_path)
    assert process.stdin is not None and process.stdout is not None
    out: dict[Any, dict[str, Any]] = {}
    watchdog = threading.Timer(60, process.kill)  # a line left unanswered fails, not hangs
    watchdog.start()
    try:
        process.stdin.write("\n".join([json.dumps(INIT), initialized, *lines]) + "\n")
        process.stdin.flush()
        for index in range(len(lines) + 1):  # one answer each, and initialize's
            message = json.loads(process.stdout.readline())
            out[message["id"] if message.get("id") is not None else f"null{index}"] = message
    finally:
        watchdog.cancel()
        process.stdin.close()
        process.wait(30)
    return out


def test_every_malformed_input_gets_the_error_the_spec_names(tmp_path: Path) -> None:
    got = answers(tmp_path, [
        "not json", "[]", '{"jsonrpc": "2.0", "id": 5}',
        call(6, {"limit": True}), call(7, {"limit": "x"}), call(8, {}, name="nosuch"),
        call(9, {"limit": 2, "colour": "red"}), call(10, {"limit": 2}),
        json.dumps({"jsonrpc": "2.0", "id": 11, "method": "tools/call", "params": 7}),
        json.dumps({"jsonrpc": "2.0", "id": 12, "method": "tools/list",
                    "params": {"cursor": 5}}),
        call(13, {"session": "1", "format": "xml"}, name="read_session")])
    nulls = [m["error"]["code"] for k, m in got.items() if str(k).startswith("null")]
    assert nulls == [-32700, -32600]  # not JSON; not an object
    codes = {k: m["error"]["code"] for k, m in got.items() if "error" in m}
    assert {k: codes.get(k) for k in (5, 6, 7, 8, 9, 11, 12, 13)} == {
        5: -32600, 6: -32602, 7: -32602, 8: -32602, 9: -32602, 11: -32600, 12: -32602,
        13: -32602}
    assert got[6]["error"]["message"] == ("invalid arguments for list_sessions: limit must be "
                                          "an integer")
    assert got[9]["error"]["message"].startswith("invalid arguments for list_sessions: "
                                                 "unknown argument colour")
    assert got[13]["error"]["message"] == ('invalid arguments for read_session: format must be '
                                           'one of "markdown", "json"')
    assert got[12]["error"]["message"] == "invalid params for tools/list: cursor has the wrong " \
        "type (string_type)"
    assert got[10]["result"]["structuredContent"]["total"] == 0  # a good call still answers
    text = json.dumps(got)
    assert "pydantic" not in text and "http" not in text and "validation error" not in text
