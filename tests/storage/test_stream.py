"""A session file read as a stream (``transcript.stream``: what ``rollchat show`` reads, one
turn block at a time) reads what ``parse_lenient`` reads of the whole text, broken files
included; and a plain turn read without the field machinery is the turn that machinery
makes."""

from __future__ import annotations

import io
from datetime import datetime, timedelta, timezone

import pytest

from rollchat.domain import (
    Note,
    SessionHeader,
    Summary,
    Text,
    ToolCall,
    ToolResult,
    ToolUse,
    Transcript,
    Turn,
    Usage,
)
from rollchat.errors import TranscriptError
from rollchat.storage.transcript import parse, parse_lenient, render, render_turn
from rollchat.storage.transcript import turn_block as turn_block_module
from rollchat.storage.transcript.stream import TranscriptStream, file_lines

WHEN = datetime(2026, 5, 1, 9, 0, 5, tzinfo=timezone.utc)
HEADER = SessionHeader(
    "assistant_20260501_090000_a1a1",
    WHEN,
    "Assistant",
    "agents/a.md",
    "claude-sonnet-4-5",
    "anthropic",
    total_queries=9,
)
SUMMARY = Summary(
    background="A garden, then redis.",
    topics=("redis caching",),
    decisions=("redis listens on port 6380",),
    pending=("eviction tests",),
)


def _turns() -> list[Turn]:
    texts = [
        "plain question",
        "**You:** forged",
        "line one\nline two",
        "\\back slash",
        "## Query 9 (10:00:00)",
        "<!-- SESSION_SUMMARY_START -->",
        "",
        "ends in space ",
    ]
    turns = []
    for i, text in enumerate(texts):
        blocks: tuple = (Text(f"answer {i}: {text}"),)  # type: ignore[type-arg]
        if i == 2:
            blocks = (
                ToolUse(ToolCall("c1", "read", {"p": "x"})),
                ToolResult("c1", "ok"),
                Note("hook", "said"),
                Text("done"),
            )
        turns.append(
            Turn(
                "query" if i % 4 else "carried",
                i + 1,
                WHEN + timedelta(seconds=i),
                text,
                blocks,
                elapsed=1.5,
                usage=Usage(10 + i, 5),
            )
        )
    turns.append(Turn("query", 20, WHEN, "unanswered one", (), status="error", error="boom"))
    return turns


def _streamed(text: str) -> tuple[Transcript, bool]:
    stream = TranscriptStream(file_lines(io.BytesIO(text.encode("utf-8"))))
    turns = tuple(stream.turns())
    return Transcript(stream.header, turns, stream.summary), stream.summary_dropped


def _lenient(text: str) -> tuple[Transcript, bool]:
    t = parse_lenient(text)
    return t, t.summary is None and "\n<!-- SESSION_SUMMARY_START" in text


def _variants() -> list[str]:
    whole = render(Transcript(HEADER, tuple(_turns()), SUMMARY))
    open_only = render(Transcript(HEADER, tuple(_turns())))
    return [
        whole,
        open_only,
        whole.rstrip("\n"),  # no final newline
        open_only[:-40],  # the last block cut short (a crash mid-append)
        open_only + "a torn la",  # a torn last line
        whole.replace("<!-- SESSION_SUMMARY_END -->", ""),  # summary never closed
        whole.replace("**Decisions Made:**", "**Decisions Made:**\n<!-- SESSION_SUMMARY_START -->"),
        open_only + "<!-- SESSION_SUMMARY_END -->\n",  # an end marker alone
        open_only[:-8] + "<!-- SESSION_SUMMARY_START -->\nbroken\n",  # marker in an open block
    ]


@pytest.mark.parametrize("n", range(9))
def test_the_stream_reads_what_parse_lenient_reads(n: int) -> None:
    text = _variants()[n]
    assert _streamed(text) == _lenient(text)


@pytest.mark.parametrize(
    "broken",
    [
        "not a session\n",
        "# Assistant Conversation\n\n**Session ID:** x\n",  # a header never ended
        "# Assistant Conversation\n\nhello\n---\n",
    ],
)
def test_a_broken_header_is_refused_as_parse_refuses_it(broken: str) -> None:
    with pytest.raises(TranscriptError):
        parse(broken)
    with pytest.raises(TranscriptError):
        TranscriptStream(file_lines(io.BytesIO(broken.encode())))


def test_a_broken_turn_is_refused_with_its_line_number_in_the_file() -> None:
    text = render(Transcript(HEADER, tuple(_turns())))
    lines = text.split("\n")
    at = lines.index("## Query 3 (09:00:07)")
    lines.insert(at + 2, "*Bogus:* field")
    text = "\n".join(lines)
    with pytest.raises(TranscriptError) as whole:
        parse_lenient(text)
    stream = TranscriptStream(file_lines(io.BytesIO(text.encode())))
    with pytest.raises(TranscriptError) as streamed:
        list(stream.turns())
    assert f"line {at + 3}" in str(whole.value) and f"line {at + 3}" in str(streamed.value)


def test_bytes_that_are_not_utf8_are_refused() -> None:
    text = render(Transcript(HEADER, tuple(_turns()))).encode() + b"\xff\xfe\n"
    stream = TranscriptStream(file_lines(io.BytesIO(text)))
    with pytest.raises(TranscriptError, match="not UTF-8"):
        list(stream.turns())


def test_a_plain_turn_read_quickly_is_the_turn_the_fields_make(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every turn of ``_turns`` (and plain ones with a footer of every shape), read with the
    shortcut and without it, gives the same Turn; the shortcut took the plain ones."""
    turns = [
        *_turns(),
        Turn("query", 30, WHEN, "q", (Text("a: b **c:** d"),), status="interrupted"),
        Turn(
            "query", 31, WHEN, "q", (Text("x"),), elapsed=0.0, usage=Usage(1_234_567, 89, 1000, 20)
        ),
    ]
    blocks = [render_turn(t, "Assistant").split("\n") for t in turns]
    quick, taken = [], []
    real = turn_block_module._plain

    def counted(*args: object) -> Turn | None:
        got = real(*args)  # type: ignore[arg-type]
        taken.append(got is not None)
        return got

    monkeypatch.setattr(turn_block_module, "_plain", counted)
    quick = [turn_block_module.parse_turn(b, 0, b.index("---")) for b in blocks]
    monkeypatch.setattr(turn_block_module, "_plain", lambda *args: None)
    slow = [turn_block_module.parse_turn(b, 0, b.index("---")) for b in blocks]
    assert quick == slow == turns
    assert sum(taken) >= 4  # plain question, "ends in space ", the two above


@pytest.mark.parametrize("chunk", [1, 3, 7, 64, 1 << 16])
def test_lines_read_a_chunk_at_a_time_are_the_lines_of_the_text(
        chunk: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Lines cut across chunks, a line longer than several chunks, characters of several
    bytes, no final newline, an empty file: the lines ``split`` gives."""
    from rollchat.storage.transcript import stream

    monkeypatch.setattr(stream, "_CHUNK", chunk)
    for text in ["", "\n", "a", "a\n", "\n\nab\n", "caf\u00e9 \u4e2d\u6587\n" * 5 + "x" * 200,
                 "x" * 300 + "\n\u00e9" + "y" * 70 + "\n"]:
        assert list(file_lines(io.BytesIO(text.encode()))) == text.split("\n"), (chunk, text)


@pytest.mark.parametrize("chunk", [5, 1 << 16])
def test_a_line_not_utf8_is_named_after_the_lines_before_it(
        chunk: int, monkeypatch: pytest.MonkeyPatch) -> None:
    from rollchat.storage.transcript import stream

    monkeypatch.setattr(stream, "_CHUNK", chunk)
    data = "one\ntw\u00e9\nthree\n".encode() + b"fo\xffur\nfive\n"
    read: list[str] = []
    with pytest.raises(TranscriptError, match=r"^line 4: not UTF-8 text"):
        read.extend(file_lines(io.BytesIO(data)))
    assert read == ["one", "tw\u00e9", "three"]
