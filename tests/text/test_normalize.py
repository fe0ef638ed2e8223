"""rollchat.text.normalize: what any text becomes where it enters, and that the session file keeps
it."""

from __future__ import annotations

import re
from datetime import datetime, timezone

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rollchat.domain import (
    SessionHeader,
    Summary,
    ToolCall,
    ToolExchange,
    Transcript,
    Turn,
    Usage,
    answer_blocks,
)
from rollchat.storage.transcript import glance, parse, render
from rollchat.text.normalize import StreamCleaner, clean, clean_bytes, clean_value, encode
from tests.examples_budget import examples

# Every code point, surrogates included (hypothesis leaves them out by default).
ANY_CHAR = st.characters(min_codepoint=0, max_codepoint=0x10FFFF, exclude_categories=())
ODD = st.sampled_from(["\x00", "\x1b", "\x07", "\r", "\r\n", "\n", "\t", "\x7f", "\x85",
                       "\ud800", "\udfff", "\udcff", "\ud83d\ude00", "\u2028", "\u202e",
                       "\ufeff", "\ufffe", "é", "🙂", "## Query 1 (00:00:00)",
                       "<!-- SESSION_SUMMARY_START -->", "**You:**"])
any_text = st.lists(ODD | st.text(ANY_CHAR, max_size=8), max_size=8).map("".join)
SETTINGS = settings(max_examples=examples(400), deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])
# What clean never leaves behind: C0 controls but tab and newline, DEL, surrogates.
LEFT_OUT = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\ud800-\udfff]")


def test_the_documented_mapping() -> None:
    assert clean("a\x00b\x1b[2Jc\x07\x7f") == "a\u2400b\u241b[2Jc\u2407\u2421"
    assert clean("one\r\ntwo\rthree\n") == "one\ntwo\u240dthree\n"
    assert clean("tab\there\nnext") == "tab\there\nnext"
    assert clean("lone \ud800 and \udcff, pair \ud83d\ude00") == "lone \ufffd and \ufffd, pair 😀"
    assert clean("\x85\u2028\u202e é") == "\x85\u2028\u202e é"  # not C0: stored as they are
    assert clean_bytes(b"ok \xff\xfe \xc3\xa9 \x00") == "ok \ufffd\ufffd é \u2400"
    assert clean_bytes(b"cut \xe2\x82") == "cut \ufffd"
    assert encode("x\udcff\x00") == "x\ufffd\u2400".encode()


@SETTINGS
@given(any_text)
def test_clean_output_is_clean_idempotent_and_keeps_the_lines(text: str) -> None:
    out = clean(text)
    assert LEFT_OUT.search(out) is None
    assert out.encode("utf-8").decode("utf-8") == out
    assert clean(out) == out
    assert out.count("\n") == text.count("\n")  # never a line added or removed
    if LEFT_OUT.search(text) is None:
        assert out == text  # clean text passes unchanged


@SETTINGS
@given(st.binary(max_size=200))
def test_decode_takes_any_bytes(data: bytes) -> None:
    out = clean_bytes(data)
    assert LEFT_OUT.search(out) is None and clean(out) == out
    assert out.count("\n") == data.count(b"\n")
    try:
        strict = data.decode("utf-8")
    except UnicodeDecodeError:
        assert "\ufffd" in out
    else:
        assert out == clean(strict)


@SETTINGS
@given(any_text, st.lists(st.integers(0, 60), max_size=6))
def test_stream_cleaner_gives_what_clean_gives_however_the_text_is_split(
        text: str, cuts: list[int]) -> None:
    points = sorted({min(c, len(text)) for c in cuts})
    pieces = [text[a:b] for a, b in zip([0, *points], [*points, len(text)], strict=True)]
    cleaner = StreamCleaner()
    assert "".join(cleaner.feed(p) for p in pieces) + cleaner.flush() == clean(text)


def test_clean_value_cleans_keys_and_nested_strings() -> None:
    value = {"q\x00": ["a\udcff", {"k": "\x1b[2J"}], "n": 3, "b": None}
    assert clean_value(value) == {"q\u2400": ["a\ufffd", {"k": "\u241b[2J"}], "n": 3,
                                  "b": None}


T0 = datetime(2026, 11, 22, 14, 30, 22, tzinfo=timezone.utc)


@st.composite
def cleaned_transcripts(draw: st.DrawFn) -> Transcript:
    def text() -> str:
        return clean(draw(any_text))

    turns = tuple(
        Turn("query", n, T0, text(), answer_blocks(text(), tuple(
            ToolExchange(ToolCall(text(), text(), {text(): text()}), text())
            for _ in range(draw(st.integers(0, 1))))), usage=Usage(1, 2))
        for n in range(1, draw(st.integers(1, 3)) + 1))
    header = SessionHeader("assistant_20261122_143022_7f3a", T0, text(), text(), text(), text(),
                           text() or None, text() or None, len(turns), 3 * len(turns))
    summary = draw(st.none() | st.just(Summary(text() or "x", (text(),), (text(),), (text(),))))
    return Transcript(header, turns, summary)


@SETTINGS
@given(cleaned_transcripts())
def test_clean_text_round_trips_through_the_session_file_unchanged(t: Transcript) -> None:
    data = encode(render(t))
    assert data == render(t).encode("utf-8")  # the store writes the rendered text as it is
    assert b"\x00" not in data
    assert parse(data.decode("utf-8")) == t
    seen = glance(lambda at, n: data[at:at + n], len(data))  # what a listing reads
    assert seen.header == t.header


@SETTINGS
@given(any_text)
def test_encode_is_clean_then_utf8(text: str) -> None:
    assert encode(text) == clean(text).encode("utf-8")


@SETTINGS
@given(any_text, st.sampled_from(["before", "after", "around"]))
def test_a_long_text_is_cleaned_as_a_short_one_is(text: str, where: str) -> None:
    """From 4,096 chars on, clean first checks at C speed whether anything needs changing
    (a tool's 35 MB of output): what it gives is what the regex alone gives."""
    pad = "plain line\n" * 500
    before, after = (pad if where != "after" else ""), (pad if where != "before" else "")
    assert clean(before + text + after) == before + clean(text) + after
