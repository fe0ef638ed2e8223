"""Issue 24, point 9: ``compact_session`` over MCP is bounded as ``rollchat compact`` is: a
``max_words`` of 10**9 or a 1 MB ``focus`` is refused with the same message from both, before
any summary is written or cached (the real server process, through the SDK's stdio client)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Any

from typer.testing import CliRunner

from rollchat.cli.app import build_cli
from rollchat.compaction.saved import MAX_FOCUS_CHARS, MAX_WORDS
from tests.compact_fixtures import OFFLINE_CONFIG, make_sessions, snapshot
from tests.server.test_mcp_server import _client, _json, _params, _text

if TYPE_CHECKING:  # the SDK is imported by the tests that run, not at collection
    from mcp import StdioServerParameters

HUGE_FOCUS = "port " * 200_000  # 1 MB
CASES: list[tuple[dict[str, Any], list[str], str]] = [
    ({"max_words": 10**9}, ["--max-words", str(10**9)],
     f"max words must be at most {MAX_WORDS:,} (got 1,000,000,000)"),
    ({"focus": HUGE_FOCUS}, ["--focus", HUGE_FOCUS],
     f"the focus is too long: 1,000,000 characters, at most {MAX_FOCUS_CHARS:,}"),
]


async def _calls(params: StdioServerParameters, errlog: Any, child: str) -> list[Any]:
    async with _client(params, errlog) as client:
        answers = [await client.call_tool("compact_session", {"session": child, **arguments})
                   for arguments, _, _ in CASES]
        answers.append(_json(await client.call_tool("compact_session", {
            "session": child, "focus": "port " * 20, "max_words": MAX_WORDS})))
    return answers


def test_compact_session_is_bounded_as_the_command_line_is(tmp_path: Path) -> None:
    made = make_sessions(tmp_path / "sessions")
    config = tmp_path / "config.yml"
    config.write_text(OFFLINE_CONFIG, encoding="utf-8")
    before = snapshot(made.root)
    with (tmp_path / "server.err").open("w+", encoding="utf-8") as errlog:
        answers = asyncio.run(asyncio.wait_for(
            _calls(_params(tmp_path, made.root, config), errlog, made.child), 90))
    for answer, (_, _, message) in zip(answers[:-1], CASES, strict=True):
        assert answer.is_error and message in _text(answer), _text(answer)
    assert answers[-1]["session"] == made.child  # within the bounds: answered
    assert answers[-1]["max_words"] == MAX_WORDS
    for _, flags, message in CASES:
        result = CliRunner().invoke(build_cli(), ["compact", made.child, *flags,
                                                  "--sessions-dir", str(made.root),
                                                  "--config", str(config)])
        assert result.exit_code == 2 and message in result.stderr, result.stderr
    after = snapshot(made.root)
    assert {k: v for k, v in after.items() if k.endswith(".md")} == {
        k: v for k, v in before.items() if k.endswith(".md")}
