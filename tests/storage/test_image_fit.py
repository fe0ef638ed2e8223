"""Images over the providers' limits (providers/image_fit.py) scaled down as a tool returns them:
the text says so in one line; what fits is kept byte for byte; what cannot be read is kept
only when it fits as it is."""

from __future__ import annotations

import base64
import io
import json
from dataclasses import replace

from PIL import Image as Pillow

from rollchat.domain import Image, Message
from rollchat.providers.anthropic import AnthropicProvider
from rollchat.providers.base import ChatRequest, TextDelta
from rollchat.providers.image_fit import MAX_BASE64_BYTES, base64_size
from rollchat.tools.images import returned
from tests.ui.test_attach_scaled import noise_png
from tests.wire_servers import WireServer, anthropic_server, text

__all__ = ["anthropic_server"]


def test_a_tool_image_over_the_base64_limit_is_scaled_and_says_so() -> None:
    data = noise_png(1250, 1250)
    text, (picture,) = returned(data)
    assert text.startswith("[image scaled from 1250x1250 (")
    assert picture.data is not None and base64_size(len(picture.data)) <= MAX_BASE64_BYTES
    assert picture.media_type == "image/png" and picture.size == len(picture.data)


def test_what_fits_is_kept_byte_for_byte() -> None:
    data = noise_png(64, 64)
    assert returned(data) == ("", returned(data)[1])
    assert returned(data)[1][0].data == data


def test_a_large_gif_becomes_a_png_of_its_first_frame() -> None:
    out = io.BytesIO()
    Pillow.new("P", (8200, 10)).save(out, format="GIF")
    text, (picture,) = returned(out.getvalue())
    assert picture.media_type == "image/png" and "scaled from 8200x10" in text


def test_a_damaged_image_is_sent_as_it_came_when_it_fits_and_refused_when_it_does_not() -> None:
    small = b"\x89PNG\r\n\x1a\n" + b"\0" * 100
    assert returned(small)[1][0].data == small
    big = b"\x89PNG\r\n\x1a\n" + b"\0" * (4 * 2**20)
    text, images = returned(big)
    assert images == () and "cannot be read as an image" in text


def test_a_request_within_the_count_and_many_image_limits_on_the_wire(
        anthropic_server: WireServer) -> None:
    """Anthropic: more than 20 images, each at most 2000 px; at most 100 in all (the oldest
    beyond become text lines); the server refuses either, so a pass means both were kept."""
    big = Image("image/png", 0, "", data=_png(2400, 50))
    small = Image("image/png", 0, "", data=_png(8, 8))
    many = tuple(replace(small, digest=f"{n:064x}") for n in range(101))
    provider = AnthropicProvider("claude-test", api_key="k", base_url=anthropic_server.url,
                                 timeout=5)
    anthropic_server.push(text("fine"))
    request = ChatRequest(model="claude-test", system="", messages=(
        Message("user", "look", images=(replace(big, digest="f" * 64), *many)),))
    assert [e for e in provider.stream(request) if isinstance(e, TextDelta)]
    [body] = anthropic_server.bodies
    blocks = body["messages"][0]["content"]
    assert sum(b["type"] == "image" for b in blocks) == 100
    assert "over the 100 images a request may hold" in json.dumps(blocks)
    # the big one was the oldest, so it became the text line; send it newest instead
    anthropic_server.push(text("fine"))
    request = replace(request, messages=(Message("user", "look", images=(
        *many[:30], replace(big, digest="f" * 64))),))
    assert [e for e in provider.stream(request) if isinstance(e, TextDelta)]
    sent = anthropic_server.bodies[1]["messages"][0]["content"]
    with Pillow.open(io.BytesIO(base64.b64decode(sent[-2]["source"]["data"]))) as picture:
        assert picture.size == (2000, 41)


def _png(width: int, height: int) -> bytes:
    out = io.BytesIO()
    Pillow.new("RGB", (width, height), (9, 9, 9)).save(out, format="PNG")
    return out.getvalue()
