"""An MCP result of text, image, text keeps the order the server gave (issue 35.5): a real MCP
server (the Python SDK's, written here) called through the CLI (piped) against the local
Anthropic and OpenAI Responses wire servers with the real SDKs. The request holds the texts
and the image in that order, and so do the transcript (the image's place is a marker line in
the result's text) and the request rebuilt from it."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

from rollchat.domain import ToolResult, image_marker
from rollchat.engine.replay import turn_messages
from rollchat.providers.anthropic import request_params
from rollchat.providers.base import ChatRequest
from rollchat.storage.images import with_image_data
from rollchat.storage.transcript import parse
from tests.agents.test_tool_images import IMAGE
from tests.e2e import clean_env, run_piped, write_config
from tests.mcp_helpers import zygote_command
from tests.wire_servers import WireServer, anthropic_server, text, tool

__all__ = ["anthropic_server"]  # the fixture, imported for pytest

SERVER = f'''
import base64

from mcp.server.mcpserver import MCPServer
from mcp.types import ImageContent, TextContent

server = MCPServer("shots")


@server.tool()
def shot() -> list:
    """A screenshot between two captions."""
    return [TextContent(type="text", text="Before the picture."),
            ImageContent(type="image", data="{base64.b64encode(IMAGE).decode()}",
                         mime_type="image/png"),
            TextContent(type="text", text="After the picture.")]


server.run()
'''


def _run(server: WireServer, tmp_path: Path) -> str:
    (tmp_path / "shots.py").write_text(SERVER, encoding="utf-8")
    command = zygote_command("shots.py")  # (forked from the zygote: the SDK imported once)
    cfg = write_config(tmp_path / "rollchat.yml", f"""\
session:
  auto_save: true
mcp_servers:
  shots:
    command: {command[0]}
    args: [{", ".join(command[1:])}]
""")
    done = run_piped(tmp_path, "take a shot\n", "--config", str(cfg), "--yes",
                     "--provider", "anthropic", "--model", "test-model", "--base-url",
                     server.url, env=clean_env(tmp_path / "home", ANTHROPIC_API_KEY="test"),
                     timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def _kinds(content: list[dict[str, Any]]) -> list[str]:
    return [c["text"] if c["type"] == "text" else c["type"] for c in content]


def test_text_image_text_reach_the_model_and_the_transcript_in_order(
        anthropic_server: WireServer, tmp_path: Path) -> None:
    anthropic_server.push(tool("mcp__shots__shot", {}, tool_id="c1"), text("A red square."))
    _run(anthropic_server, tmp_path)
    sent = anthropic_server.bodies[1]["messages"]
    [result] = [b for m in sent if isinstance(m["content"], list) for b in m["content"]
                if b.get("type") == "tool_result"]
    assert _kinds(result["content"]) == ["Before the picture.", "image", "After the picture."]
    assert result["content"][1]["source"]["data"] == base64.b64encode(IMAGE).decode()
    [session] = (tmp_path / "sessions").glob("*.md")
    transcript = parse(session.read_text(encoding="utf-8"))
    [turn] = transcript.turns
    [block] = [b for b in turn.blocks if isinstance(b, ToolResult)]
    [saved] = block.images
    marker = image_marker(1, saved)
    assert block.content == f"Before the picture.\n{marker}\nAfter the picture."
    # the request rebuilt from the file (the image read back) is the one sent
    messages = [m for t in transcript.turns
                for m in turn_messages(with_image_data(t, session.parent))]
    body = anthropic_server.bodies[1]
    again = request_params(ChatRequest("test-model", body["system"][0]["text"],
                                       tuple(messages[:-1]), body["max_tokens"]))
    assert again["messages"][-1]["content"][0]["content"] == result["content"]
