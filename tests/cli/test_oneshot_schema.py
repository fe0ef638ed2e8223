"""The JSON ``rollchat -p`` prints matches the schemas docs/oneshot.md documents (read from
the page itself: the ``json`` blocks after ``<!-- schema: NAME -->``), for real runs: the
offline model, and a scripted model calling tools and failing (tests/wire_servers.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from tests.cli.test_oneshot_wire import command
from tests.e2e import clean_env, run_piped
from tests.wire_servers import WireServer, error, openai_server, text, tool

__all__ = ["openai_server"]

PAGE = Path(__file__).resolve().parents[2] / "docs" / "oneshot.md"


def schemas() -> dict[str, dict[str, Any]]:
    """Each schema of the page by name."""
    found = re.findall(r"<!-- schema: (\w+) -->\n```json\n(.*?)\n```", PAGE.read_text(
        encoding="utf-8"), flags=re.DOTALL)
    return {name: json.loads(body) for name, body in found}


def check(lines: list[str], output_format: str) -> list[dict[str, Any]]:
    """Every line of stdout valid against the page's schema (a done event against both)."""
    page = schemas()
    objects = [json.loads(line) for line in lines]
    if output_format == "json":
        assert len(objects) == 1
        jsonschema.validate(objects[0], page["result"])
        return objects
    for event in objects:
        jsonschema.validate(event, page["event"])
        if event["type"] == "done":
            jsonschema.validate({k: v for k, v in event.items() if k != "type"}, page["result"])
    assert objects[-1]["type"] == "done"
    return objects


def test_the_page_holds_both_schemas_and_they_reject_what_they_should() -> None:
    page = schemas()
    assert set(page) == {"result", "event"}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"answer": "x"}, page["result"])  # fields missing
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"type": "text", "text": "x", "extra": 1}, page["event"])


@pytest.mark.parametrize("output_format", ["json", "stream-json"])
def test_an_offline_run_matches_the_schema(tmp_path: Path, output_format: str) -> None:
    done = run_piped(tmp_path, None, "-p", "hello", "--output-format", output_format,
                     env=clean_env(tmp_path / "home"))
    assert done.returncode == 0, done.stderr
    objects = check(done.stdout.splitlines(), output_format)
    if output_format == "stream-json":
        assert objects[0]["type"] == "start"
        texts = "".join(o["text"] for o in objects if o["type"] == "text")
        assert texts == objects[-1]["answer"]


@pytest.mark.parametrize("output_format", ["json", "stream-json"])
def test_tool_calls_refusals_and_failures_match_the_schema(
        openai_server: WireServer, tmp_path: Path, output_format: str) -> None:
    openai_server.push(tool("count_words", {"text": "a b"}, tool_id="c1"),
                       tool("delete_everything", {"path": "/"}, tool_id="c2"),
                       text("Done.", reasoning="The call was refused."),
                       error(400, "no such model"))
    argv, env = command(openai_server, tmp_path, "-p", "go", "--output-format", output_format)
    ran = run_piped(tmp_path, None, *argv, env=env)
    assert ran.returncode == 4, ran.stderr
    objects = check(ran.stdout.splitlines(), output_format)
    statuses = [c["status"] for c in objects[-1]["tool_calls"]]
    assert statuses == ["ok", "refused"]
    failed = run_piped(tmp_path, None, *argv, env=env)
    assert failed.returncode == 3, failed.stderr
    assert check(failed.stdout.splitlines(), output_format)[-1]["error"]
