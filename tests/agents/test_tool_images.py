"""An image a tool returns reaches the model: an agent-file tool returning PNG bytes, driven
through the CLI (piped) against the local Anthropic and OpenAI wire servers with the real
SDKs. Anthropic gets it inside the tool result, OpenAI in a user message right after the
results; the transcript refers to a file beside the session (owner-only), never base64; an
OpenAI-compatible server not set to take images, and the offline model, get a text line."""

from __future__ import annotations

import base64
import os
import stat
import struct
import zlib
from pathlib import Path
from typing import Any

import pytest

from rollchat.domain import ToolResult
from rollchat.engine.replay import turn_messages
from rollchat.providers.anthropic import request_params
from rollchat.providers.base import ChatRequest
from rollchat.storage.images import with_image_data
from rollchat.storage.transcript import parse
from tests.e2e import clean_env, run_piped, write_config
from tests.wire_servers import WireServer, anthropic_server, openai_server, text, tool

__all__ = ["anthropic_server", "openai_server"]  # the fixtures, imported for pytest


def png(width: int = 3, height: int = 2) -> bytes:
    """A real PNG (red pixels), made the way the format says."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))
    rows = b"".join(b"\x00" + b"\xff\x00\x00" * width for _ in range(height))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2,
                                                                0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


IMAGE = png()
AGENT = f'''
"""Takes screenshots."""
import base64

name = "Shooter"
system_prompt = "You look at screens."
approval = "auto"


def screenshot(window: str) -> bytes:
    """Take a screenshot of a window.

    Args:
        window: Which window.
    """
    return base64.b64decode("{base64.b64encode(IMAGE).decode()}")


tools = [screenshot]
'''


def _run(server: WireServer, tmp_path: Path, config: str = "") -> tuple[str, int]:
    agent = tmp_path / "shooter.py"
    agent.write_text(AGENT, encoding="utf-8")
    provider = "openai" if server.url.endswith("/v1") else "anthropic"
    key = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}[provider]
    cfg = write_config(tmp_path / "rollchat.yml", config or "session:\n  auto_save: true\n")
    done = run_piped(tmp_path, "what is on the screen?\n", "--config", str(cfg), str(agent),
                     "--provider", provider, "--model", "test-model", "--base-url", server.url,
                     env=clean_env(tmp_path / "home", **{key: "test"}))
    return done.stdout + done.stderr, done.returncode


def _saved(tmp_path: Path) -> tuple[Path, Any]:
    [session] = (tmp_path / "sessions").glob("*.md")
    return session, parse(session.read_text(encoding="utf-8"))


def test_anthropic_gets_the_image_in_the_tool_result(anthropic_server: WireServer,
                                                     tmp_path: Path) -> None:
    anthropic_server.push(tool("screenshot", {"window": "editor"}, tool_id="c1",
                               text="Let me look."), text("A red square."))
    out, code = _run(anthropic_server, tmp_path)
    assert code == 0, out
    sent = anthropic_server.bodies[1]["messages"]
    [result] = [b for m in sent if isinstance(m["content"], list) for b in m["content"]
                if b.get("type") == "tool_result"]
    [image] = [c for c in result["content"] if c["type"] == "image"]
    assert image["source"] == {"type": "base64", "media_type": "image/png",
                               "data": base64.b64encode(IMAGE).decode()}
    session, transcript = _saved(tmp_path)
    markdown = session.read_text(encoding="utf-8")
    assert base64.b64encode(IMAGE).decode() not in markdown  # a reference, not the bytes
    [turn] = transcript.turns
    [block] = [b for b in turn.blocks if isinstance(b, ToolResult)]
    [saved] = block.images
    path = session.parent / saved.path
    assert path.read_bytes() == IMAGE and saved.size == len(IMAGE)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(path.parent).st_mode) == 0o700
    # the request rebuilt from the file (the image read back) is the one sent
    messages = [m for t in transcript.turns
                for m in turn_messages(with_image_data(t, session.parent))]
    body = anthropic_server.bodies[1]
    again = request_params(ChatRequest("test-model", body["system"][0]["text"],
                                       tuple(messages[:-1]), body["max_tokens"]))
    assert again["messages"][-1]["content"][0]["content"] == result["content"]


def test_openai_gets_the_image_after_the_results_when_the_model_takes_them(
        openai_server: WireServer, tmp_path: Path) -> None:
    openai_server.push(tool("screenshot", {"window": "editor"}, tool_id="c1"),
                       text("A red square."))
    out, code = _run(openai_server, tmp_path,
                     "models:\n  test-model:\n    images: true\n")
    assert code == 0, out
    sent = openai_server.bodies[1]["messages"]
    roles = [m["role"] for m in sent]
    assert roles[-3:] == ["assistant", "tool", "user"]  # the call, its result, its image
    parts = sent[-1]["content"]
    assert "c1" in parts[0]["text"] and "screenshot" in parts[0]["text"]
    assert parts[1]["image_url"]["url"] == ("data:image/png;base64,"
                                            + base64.b64encode(IMAGE).decode())


@pytest.mark.parametrize("config", ["", "models:\n  test-model:\n    images: false\n"])
def test_a_server_not_set_to_take_images_gets_a_line_saying_so(
        openai_server: WireServer, tmp_path: Path, config: str) -> None:
    openai_server.push(tool("screenshot", {"window": "editor"}, tool_id="c1"),
                       text("I cannot see it."))
    out, code = _run(openai_server, tmp_path, config)
    assert code == 0, out
    body = openai_server.bodies[1]
    assert "image_url" not in str(body)
    [result] = [m for m in body["messages"] if m["role"] == "tool"]
    assert result["content"] == (f"[image: image/png, {len(IMAGE):,} bytes, not shown: this "
                                 "model does not take images]")
    _, transcript = _saved(tmp_path)  # the file keeps the image all the same
    [block] = [b for b in transcript.turns[0].blocks if isinstance(b, ToolResult)]
    assert len(block.images) == 1
