"""Images in an imported Claude Code or Codex session reach the imported turns: a screenshot a
tool returned stays with its result, an image the user pasted is attached to the prompt; each
is saved beside the session and referred to, never written into the markdown. The lines are
real fixture lines with an image block added in the form the tools write (Claude Code:
``{"type": "image", "source": {"type": "base64", ...}}``; Codex: ``input_image`` with a
``data:`` URL); an image that is not one the model could be shown is counted as left out."""

from __future__ import annotations

import base64
import json
from pathlib import Path

from rollchat.domain import ToolResult
from rollchat.storage.imports import read_transcript
from rollchat.storage.transcript import parse
from tests.agents.test_tool_images import png
from tests.storage.test_import_real import run_cli

REAL = Path(__file__).parents[1] / "fixtures" / "real"
PICTURE = png(5, 5)
DATA = base64.b64encode(PICTURE).decode()


def _claude_with_images(tmp_path: Path) -> Path:
    """happy-1-continue-run-ls-tool.jsonl with a screenshot in its first tool result and a
    pasted image in its first typed prompt."""
    lines = (REAL / "claude-code" / "happy-1-continue-run-ls-tool.jsonl").read_text(
        encoding="utf-8").splitlines()
    out, result_done, prompt_done = [], False, False
    for line in lines:
        row = json.loads(line) if line.strip() else None
        content = row.get("message", {}).get("content") if isinstance(row, dict) else None
        if isinstance(content, list) and not result_done and any(
                b.get("type") == "tool_result" for b in content if isinstance(b, dict)):
            block = next(b for b in content if b.get("type") == "tool_result")
            text = block["content"] if isinstance(block["content"], str) else ""
            block["content"] = [{"type": "text", "text": text},
                                {"type": "image", "source": {"type": "base64",
                                                             "media_type": "image/png",
                                                             "data": DATA}}]
            result_done, line = True, json.dumps(row)
        elif isinstance(row, dict) and row.get("type") == "user" and isinstance(content, str) \
                and not prompt_done and not row.get("isMeta"):
            row["message"]["content"] = [
                {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                             "data": DATA}},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                             "data": base64.b64encode(b"not a png").decode()}},
                {"type": "text", "text": content}]
            prompt_done, line = True, json.dumps(row)
        out.append(line)
    assert result_done and prompt_done
    path = tmp_path / "with-images.jsonl"
    path.write_text("\n".join(out) + "\n", encoding="utf-8")
    return path


def test_claude_code_images_are_imported_and_saved_beside_the_session(tmp_path: Path) -> None:
    path = _claude_with_images(tmp_path)
    got = read_transcript(path.read_bytes(), path.name)
    assert got.left_out["image"] == 1  # the one that is not an image
    pasted = [t for t in got.turns if t.attached]
    assert len(pasted) == 1 and pasted[0].attached[0].data == PICTURE
    shots = [b for t in got.turns for b in t.blocks if isinstance(b, ToolResult) and b.images]
    assert len(shots) == 1 and shots[0].images[0].media_type == "image/png"
    code, _, err = run_cli(tmp_path, "import", str(path), "--local-summary")
    assert code == 0, err
    [session] = (tmp_path / "s").glob("*.md")
    text = session.read_text(encoding="utf-8")
    assert DATA not in text and text.count("](") >= 2
    turns = parse(text).turns
    saved = [i for t in turns for i in t.attached] + [
        i for t in turns for b in t.blocks if isinstance(b, ToolResult) for i in b.images]
    assert len(saved) == 2 and all((session.parent / i.path).read_bytes() == PICTURE
                                   for i in saved)


def test_a_codex_input_image_is_attached_to_its_prompt(tmp_path: Path) -> None:
    source = sorted((REAL / "codex").glob("*.jsonl"))[-1]
    rows = [json.loads(x) for x in source.read_text(encoding="utf-8").splitlines() if x.strip()]
    for row in rows:
        payload = row.get("payload") if isinstance(row.get("payload"), dict) else row
        content = payload.get("content")
        if payload.get("type") == "message" and payload.get("role") == "user" and \
                isinstance(content, list) and any(
                    "<environment_context>" not in str(b.get("text", "")) and
                    "AGENTS.md" not in str(b.get("text", "")) for b in content):
            content.append({"type": "input_image",
                            "image_url": f"data:image/png;base64,{DATA}"})
            break
    path = tmp_path / "codex-with-image.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    got = read_transcript(path.read_bytes(), path.name)
    assert [i.data for t in got.turns for i in t.attached] == [PICTURE]
