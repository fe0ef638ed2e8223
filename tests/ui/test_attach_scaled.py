"""An image over the providers' limits is scaled down to fit, saying so in one line, as a user
attaches it in the chat (piped through the CLI) against the local Anthropic wire server,
which refuses an image whose base64 text is over 5 MB or whose side is over 8000 px."""

from __future__ import annotations

import base64
import io
import os
from pathlib import Path

from PIL import Image as Pillow

from rollchat.providers.image_fit import MAX_BASE64_BYTES
from tests.ui.test_attach import _chat
from tests.wire_servers import WireServer, anthropic_server, text

__all__ = ["anthropic_server"]


def noise_png(width: int, height: int) -> bytes:
    """A PNG that does not compress: random pixels."""
    picture = Pillow.frombytes("RGB", (width, height), os.urandom(width * height * 3))
    out = io.BytesIO()
    picture.save(out, format="PNG")
    return out.getvalue()


def test_a_4_5_mb_png_is_scaled_under_the_base64_limit(anthropic_server: WireServer,
                                                       tmp_path: Path) -> None:
    data = noise_png(1250, 1250)  # ~4.5 MB of file, ~6 MB of base64
    assert 4 * 2**20 < len(data) < 5 * 2**20
    (tmp_path / "shot.png").write_bytes(data)
    anthropic_server.push(text("A picture of noise."))
    out, code = _chat(anthropic_server, tmp_path, "attach shot.png\nwhat is it?\n")
    assert code == 0, out
    assert "A picture of noise." in out
    assert anthropic_server.refused_params == []
    [sent] = [b for b in anthropic_server.bodies[0]["messages"][0]["content"]
              if b["type"] == "image"]
    assert len(sent["source"]["data"]) <= MAX_BASE64_BYTES
    scaled = base64.b64decode(sent["source"]["data"])
    with Pillow.open(io.BytesIO(scaled)) as picture:
        assert picture.size[0] < 1250 and picture.size[0] == picture.size[1]
    assert "scaled from 1250x1250" in " ".join(out.split())


def test_an_image_wider_than_8000_px_is_scaled_to_8000(anthropic_server: WireServer,
                                                       tmp_path: Path) -> None:
    wide = Pillow.new("RGB", (9000, 300), (200, 30, 30))
    out_file = io.BytesIO()
    wide.save(out_file, format="PNG")
    (tmp_path / "wide.png").write_bytes(out_file.getvalue())
    anthropic_server.push(text("Red."))
    out, code = _chat(anthropic_server, tmp_path, "attach wide.png\ncolour?\n")
    assert code == 0, out
    assert "Red." in out and anthropic_server.refused_params == []
    [sent] = [b for b in anthropic_server.bodies[0]["messages"][0]["content"]
              if b["type"] == "image"]
    with Pillow.open(io.BytesIO(base64.b64decode(sent["source"]["data"]))) as picture:
        assert picture.size == (8000, 266)
    assert "scaled from 9000x300" in " ".join(out.split())
