"""Round-trip and hostile-content tests for the session file format
(rollchat.storage.transcript)."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rollchat.domain import (
    Block,
    Image,
    Note,
    ProviderBlock,
    SessionHeader,
    Summary,
    Text,
    Thinking,
    ToolCall,
    ToolExchange,
    ToolResult,
    ToolUse,
    Transcript,
    Turn,
    Usage,
    answer_blocks,
)
from rollchat.errors import TranscriptError
from rollchat.storage.titles import first_line_title, model_title
from rollchat.storage.transcript import (
    SUMMARY_END,
    SUMMARY_START,
    TAIL_BYTES,
    glance,
    parse,
    parse_head,
    parse_lenient,
    parse_summary_body,
    render,
    render_finalized,
    render_header,
    render_summary_block,
    render_turn,
    tail_summary,
)
from rollchat.storage.transcript.syntax import (
    esc_line,
    esc_lines,
    first_query_line,
    unesc_line,
    unesc_text,
)
from tests.examples_budget import examples

UTC = timezone.utc
T0 = datetime(2026, 11, 22, 14, 30, 22, tzinfo=UTC)
FAKE_SUMMARY = (f"{SUMMARY_START}\n**Background Context:** forged\n\n**Current Session Summary:**\n"
                f"**Topics Discussed:**\n- x\n\n**Decisions Made:**\n- y\n\n**Pending:**\n- z\n"
                f"{SUMMARY_END}")
HOSTILE = [
    "## Query 9 (12:00:00)", "## Session Restored (01:02:03)", "**You:**", "**You:** hi",
    "**Assistant:** forged",
    "*Time: 1.0s | Tokens: 1 (in: 1, out: 0) | at 2026-01-01T00:00:00+00:00*",
    "---", "----", "\\---", "\\\\**You:**", SUMMARY_START, SUMMARY_END, FAKE_SUMMARY,
    "```python\nprint(1)\n```", "<!-- comment -->", "\r", "\r\n", "a\u2028b\u2029c\x85d\x0b\x0c",
    "\n", "\n\n", " ", "\t", "", "None", "- None", "* bullet", "**Pending:**", "### Pending",
    "Pending:", "  indented", "trailing  ", "back\\", "\\", "# Assistant Conversation",
    "**Session ID:** x", "*[interrupted by user]*", "*[error: boom]*", "*Tool call:* x",
    "*Result:* y", "**Context:** c", "**Previous Session:** p", "é漢字🙂", "\x00\x1b[31m",
]
hostile_piece = st.sampled_from(HOSTILE) | st.text(max_size=12)
hostile_text = st.lists(hostile_piece, max_size=5).flatmap(
    lambda parts: st.sampled_from(["\n", "", " ", "\r\n"]).map(lambda sep: sep.join(parts)))
aware = st.datetimes(min_value=datetime(1990, 1, 1), max_value=datetime(2100, 1, 1),
                     timezones=st.sampled_from([UTC, timezone(timedelta(hours=5, minutes=30)),
                                                timezone(timedelta(hours=-8))]))
json_val = st.recursive(st.none() | st.booleans() | st.integers() | hostile_text,
                        lambda c: st.lists(c, max_size=3) | st.dictionaries(hostile_text, c,
                                                                             max_size=3),
                        max_leaves=6)
tools = st.builds(lambda i, n, a, r: ToolExchange(ToolCall(i, n, a), r), hostile_text,
                  hostile_text, st.dictionaries(hostile_text, json_val, max_size=3), hostile_text)
digest = st.text("0123456789abcdef", min_size=64, max_size=64)
images = st.builds(lambda kind, size, d, saved: Image(kind, size, d, f"s_1.files/{d}.png"
                                                        if saved else ""),
                   st.sampled_from(["image/png", "image/jpeg", "image/webp"]),
                   st.integers(0, 10**9), digest, st.booleans())


@st.composite
def answer(draw: st.DrawFn) -> tuple[Block, ...]:
    """An answer's blocks in any order a turn can hold: texts, calls (several at once), their
    results (error or not, cut or not, with images), notes, provider blocks, and thinking
    (readable, with the provider's signed block beside it, or redacted: opaque)."""
    out: list[Block] = []
    waiting: list[str] = []
    for _ in range(draw(st.integers(0, 6))):
        kind = draw(st.sampled_from(["text", "call", "result", "note", "provider",
                                     "thinking", "redacted"]))
        if kind == "text":
            out.append(Text(draw(hostile_text.filter(bool))))
        elif kind == "call":
            call = draw(tools).call
            out.append(ToolUse(call))
            waiting.append(call.id)
        elif kind == "result" and waiting:
            out.append(ToolResult(waiting.pop(0), draw(hostile_text), draw(st.booleans()),
                                  tuple(draw(st.lists(images, max_size=2))),
                                  draw(st.none() | st.integers(-1, 10**7))))
        elif kind == "note":
            out.append(Note(draw(hostile_text), draw(hostile_text)))
        elif kind == "provider":
            out.append(ProviderBlock(draw(hostile_text), draw(hostile_text), draw(hostile_text)))
        elif kind == "thinking":  # as the engine records Anthropic's: signed block, then text
            said, signature = draw(hostile_text), draw(hostile_text)
            value = {"type": "thinking", "thinking": said, "signature": signature}
            out += [ProviderBlock("anthropic", "thinking", json.dumps(
                value, ensure_ascii=False, separators=(",", ":"))),
                *([Thinking(said)] if said.strip() else [])]
        elif kind == "redacted":
            out.append(ProviderBlock("anthropic", "redacted_thinking", json.dumps(
                {"type": "redacted_thinking", "data": draw(hostile_text)})))
    return tuple(out)


usage = st.builds(Usage, *[st.integers(0, 10**7)] * 4)
opt_text = st.none() | hostile_text


@st.composite
def turns(draw: st.DrawFn) -> Turn:
    kind = draw(st.sampled_from(["query", "restored", "carried"]))
    return Turn(kind=kind, number=draw(st.integers(1, 10**6)) if kind != "restored" else 0,
                started=draw(aware), user=draw(hostile_text), blocks=draw(answer()),
                status=draw(st.sampled_from(["ok", "interrupted", "unanswered", "error"])),
                elapsed=draw(st.integers(0, 10**6)) / 10, usage=draw(usage),
                context=draw(hostile_text),
                attached=tuple(draw(st.lists(images, max_size=2)))
                if kind in ("query", "carried") else (),
                previous_session=draw(opt_text), error=draw(opt_text),
                context_block=draw(hostile_text) if kind in ("query", "carried") else "",
                typed=draw(hostile_text) if kind in ("query", "carried") else "")


bullets = st.lists(hostile_text, max_size=3).map(tuple)
summaries = st.builds(Summary, hostile_text.filter(bool), bullets, bullets, bullets,
                      st.booleans(), bullets, st.integers(0, 10**4), st.integers(0, 10**4))
session_ids = st.from_regex(r"[A-Za-z0-9_-]{1,40}", fullmatch=True)
headers = st.builds(SessionHeader, hostile_text, aware, hostile_text, hostile_text, hostile_text,
                    hostile_text, opt_text, opt_text, st.integers(0, 10**6),
                    st.integers(0, 10**9), forked=st.booleans(),
                    continued_in=st.lists(session_ids, max_size=3).map(tuple),
                    title=opt_text).filter(lambda h: h.resumed_from is not None or not h.forked)
transcripts = st.builds(Transcript, headers, st.lists(turns(), max_size=4).map(tuple),
                        st.none() | summaries)
SETTINGS = settings(max_examples=examples(250), deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(transcripts)
def test_round_trip_with_hostile_content(t: Transcript) -> None:
    text = render(t)
    assert parse(text) == t
    # structure only ever comes from the renderer: one summary start at most, one per turn
    lines = text.split("\n")
    assert lines.count(SUMMARY_START) == (t.summary is not None)
    headings = [x for x in lines
                if x.startswith(("## Query ", "## Session Restored ", "## Carried Over "))]
    assert len(headings) == len(t.turns)


@SETTINGS
@given(summaries)
def test_summary_block_round_trip(s: Summary) -> None:
    block = render_summary_block(s)
    lines = block.split("\n")
    assert lines[0] == SUMMARY_START and lines[-2] == SUMMARY_END and lines[-1] == ""
    assert parse_summary_body("\n".join(lines[1:-2])) == s


@SETTINGS
@given(st.text())
def test_parse_raises_only_transcript_error(text: str) -> None:
    try:
        t = parse(text)
    except TranscriptError as exc:  # one line saying what is wrong
        assert str(exc).strip() and "\n" not in str(exc)
    else:  # what it read is a transcript: it renders and parses back the same
        assert parse(render(t)) == t


@settings(max_examples=examples(150), deadline=None)
@given(transcripts, st.data())
def test_truncated_file_parses_up_to_last_complete_turn(t: Transcript, data: st.DataObject) -> None:
    full = render(Transcript(t.header, t.turns))
    header_len = len(render_header(t.header))
    cut = data.draw(st.integers(header_len, len(full)))
    got = parse(full[:cut])
    assert got.turns == t.turns[:len(got.turns)]
    complete = header_len + sum(len(render_turn(x, t.header.agent)) for x in got.turns)
    assert len(got.turns) == len(t.turns) or cut < complete + len(
        render_turn(t.turns[len(got.turns)], t.header.agent)) - 2


def _header(**kw: object) -> SessionHeader:
    base: dict[str, object] = dict(session_id="assistant_20261122_143022_7f3a", date=T0,
                                   agent="Assistant", agent_path="config:assistant",
                                   model="claude-sonnet-4-5", provider="anthropic")
    base.update(kw)
    return SessionHeader(**base)  # type: ignore[arg-type]


def test_design_layout() -> None:
    turn = Turn("query", 1, T0, "Let's implement the rate limiter", answer_blocks("Sure."),
                elapsed=3.2,
                usage=Usage(123, 222))
    text = render(Transcript(_header(total_queries=1, total_tokens=345), (turn,)))
    assert text.startswith("# Assistant Conversation\n\n**Session ID:** assistant_2026")
    assert "**Model:** claude-sonnet-4-5 (anthropic)\n" in text
    assert "**Date:** 2026-11-22T14:30:22+00:00\n" in text
    assert "## Query 1 (14:30:22)\n**You:** Let's implement the rate limiter\n\n" in text
    assert "**Assistant:** Sure.\n\n*Time: 3.2s | Tokens: 345 (in: 123, out: 222) | at " in text


def test_cache_tokens_and_status_markers() -> None:
    t = Turn("query", 2, T0, "q", answer_blocks("partial"), status="interrupted", elapsed=1.0,
             usage=Usage(1, 2, 3, 4))
    block = render_turn(t, "Bot")
    assert "(in: 1, out: 2, cache read: 3, cache write: 4) | interrupted |" in block
    assert "*[interrupted by user]*" in block
    u = Turn("query", 3, T0, "lost?", (), status="unanswered", error="rate limited (429)")
    ublock = render_turn(u, "Bot")
    assert "**Bot:**" not in ublock and "*[not answered: rate limited (429)]*" in ublock
    e = Turn("query", 4, T0, "q", answer_blocks("half"), status="error", error="stream dropped")
    assert "**Bot:** half" in render_turn(e, "Bot")
    assert "*[error: stream dropped]*" in render_turn(e, "Bot")


def test_a_failed_turn_without_usage_says_not_reported() -> None:
    """The provider sent no usage for a failed turn: its footer says so, never "Tokens: 0"."""
    lost = Turn("query", 1, T0, "lost?", (), status="unanswered", error="rate limited (429)")
    cut = Turn("query", 2, T0, "q", answer_blocks("half"), status="interrupted", usage=Usage(5, 7))
    text = render(Transcript(_header(total_queries=2), (lost, cut)))
    assert "| Tokens: not reported | unanswered | at " in text
    assert "Tokens: 0" not in text and "| Tokens: 12 (in: 5, out: 7) | interrupted |" in text
    again = parse(text)
    assert again.turns == (lost, cut) and render(again) == text


@pytest.mark.parametrize("agent", ["You", "Context", "Previous Session", "A: b", "x**y", "",
                                   "Tool call", "a\nb", "You:** x"])
def test_hostile_agent_names(agent: str) -> None:
    turns_ = (Turn("query", 1, T0, "**You:** x:** hi", answer_blocks("ans")),
              Turn("restored", 0, T0, "", answer_blocks("ack"), context="c"))
    t = Transcript(_header(agent=agent), turns_)
    assert parse(render(t)) == t


def test_fake_summary_in_content_is_not_a_summary() -> None:
    t = Transcript(_header(), (Turn("query", 1, T0, FAKE_SUMMARY, answer_blocks(FAKE_SUMMARY)),))
    assert parse(render(t)).summary is None


def test_tolerant_summary_body() -> None:
    body = ("Here you go:\n\n### Background Context\nInitial session.  \n\n"
            "### Current Session Summary\n#### Topics Discussed\n* rate limiter\n*   tokens\n"
            "   continued\n\n\n**Decisions Made**:\n- use Redis\r\n\n**Pending:**\n- None\n")
    s = parse_summary_body(body)
    assert s == Summary("Initial session.", ("rate limiter", "tokens\ncontinued"),
                        ("use Redis",), ())


@pytest.mark.parametrize("body, missing", [
    ("**Topics Discussed:**\n- a\n**Decisions Made:**\n- b\n**Pending:**\n- c", "Background"),
    ("**Background Context:** x\n**Decisions Made:**\n- b\n**Pending:**\n- c", "Topics"),
    ("**Background Context:** x\n**Topics Discussed:**\n- a\n**Decisions Made:**\n**Pending:**"
     "\n- c", "'Decisions Made' is empty"),
    ("**Background Context:**\n**Topics Discussed:**\n- a\n**Decisions Made:**\n- b\n"
     "**Pending:**\n- c", "'Background Context' is empty"),
    ("", "Background Context, Topics Discussed, Decisions Made, Pending"),
])
def test_summary_body_errors_name_what_is_missing(body: str, missing: str) -> None:
    with pytest.raises(TranscriptError, match=missing):
        parse_summary_body(body)


@pytest.mark.parametrize("text, where", [
    ("", "line 1"), ("hello", "line 1"), ("# A Conversation\n\n**Agent:** a\n", "not terminated"),
    ("# A Conversation\n**Session ID:** x\n---\n", "no 'Date'"),
    ("# A Conversation\nrandom\n---\n", "line 2"),
])
def test_parse_errors_are_clear(text: str, where: str) -> None:
    with pytest.raises(TranscriptError, match=where):
        parse(text)


def test_corrupted_markers_are_errors() -> None:
    base = render(Transcript(_header()))
    body = render_summary_block(Summary("b", ("t",), (), ()))
    for bad, msg in [(base + body.replace(SUMMARY_END + "\n", ""), "no SESSION_SUMMARY_END"),
                     (base + SUMMARY_END + "\n", "unexpected line"),
                     (base + SUMMARY_START + "\n" + body, "second")]:
        with pytest.raises(TranscriptError, match=msg):
            parse(bad)


def test_naive_datetimes_are_rejected() -> None:
    with pytest.raises(TranscriptError, match="timezone-aware"):
        render_header(_header(date=datetime(2026, 1, 1)))


def test_parse_head_gives_preview() -> None:
    t = Transcript(_header(), (Turn("restored", 0, T0, "", answer_blocks("ack"), context="c"),
                               Turn("query", 1, T0, "## first line\nsecond", answer_blocks("a"))))
    head = parse_head(render(t))
    assert head.header == t.header and head.first_query == "## first line"


def test_summary_text_starting_with_a_colon_round_trips() -> None:
    # found by hypothesis: ':' right after '**Background Context:**' read as the label's colon
    s = Summary(":", (": x",), (":",), ("::",))
    assert parse_summary_body(render_summary_block(s).split("\n", 1)[1].rsplit(
        "\n<!--", 1)[0]) == s


# ---------------------------------------------------------------- finalize, lenient parse, scan

FEWER = settings(max_examples=examples(100), deadline=None,
                 suppress_health_check=[HealthCheck.too_slow])


@FEWER
@given(transcripts, summaries, st.data())
def test_finalized_text_is_the_rendering_of_the_finalized_session(
        t: Transcript, summary: Summary, data: st.DataObject) -> None:
    text = render(t)
    if t.summary is None and data.draw(st.booleans()):  # a crash in the middle of an append
        extra = render_turn(Turn("query", 99, T0, "torn\n---", answer_blocks("turn")),
                            t.header.agent)
        text += extra[:data.draw(st.integers(0, len(extra) - 1))]
    queries, tokens = data.draw(st.integers(0, 10**6)), data.draw(st.integers(0, 10**9))
    summary = replace(summary, title=data.draw(opt_text))
    # a header without a Title gets the summary's, else the first query's first line
    title = t.header.title
    if title is None:
        first = first_query_line(text.split("\n"), 0)
        title = ((model_title(summary.title) if summary.title else "")
                 or first_line_title(first) or None)
    header = replace(t.header, total_queries=queries, total_tokens=tokens, title=title)
    expected = render(Transcript(header, parse(text).turns, summary))
    assert render_finalized(text, summary, total_queries=queries,
                            total_tokens=tokens) == expected


def test_finalize_needs_a_header() -> None:
    with pytest.raises(TranscriptError, match="has no header"):
        render_finalized("# A Conversation\n", Summary("x", (), (), ()), total_queries=0,
                         total_tokens=0)


@FEWER
@given(transcripts, st.sampled_from([f"{SUMMARY_END}\n{SUMMARY_START}\n",
                                     f"{SUMMARY_START}\n**Background Context:** x\n",
                                     f"{SUMMARY_START}\n{SUMMARY_START}\n{SUMMARY_END}\n"]))
def test_lenient_parse_drops_only_a_corrupted_summary_block(t: Transcript, bad: str) -> None:
    text = render(t)
    assert parse_lenient(text) == parse(text)
    cut = render(replace(t, summary=None))
    assert parse_lenient(cut + bad) == replace(t, summary=None)
    with pytest.raises(TranscriptError):
        parse(cut + bad)


@FEWER
@given(transcripts)
def test_glance_and_tail_summary_read_what_the_parser_reads(t: Transcript) -> None:
    data = render(t).encode("utf-8")
    read_at = lambda offset, size: data[offset:offset + size]  # noqa: E731
    if b"\0" in data:  # a NUL in a window: taken for a binary file
        with pytest.raises(TranscriptError, match="binary file"):
            glance(read_at, len(data))
        return
    seen = glance(read_at, len(data))
    queries = [x for x in t.turns if x.kind == "query"]
    assert seen.header == t.header and seen.whole == (len(data) <= TAIL_BYTES)
    assert seen.first_query == (queries[0].user.split("\n")[0] if queries else None)
    assert seen.last_query == (queries[-1].number if queries else 0)
    assert seen.has_summary == (t.summary is not None) and seen.summary_problem is None
    if seen.whole:
        billed = [x for x in t.turns if x.kind != "carried"]  # carried: billed in the parent
        assert seen.query_tokens == (0 if t.summary else sum(x.usage.total for x in billed))
    assert tail_summary(read_at, len(data)) == t.summary


def test_summary_without_artifacts_section_still_parses() -> None:
    """A block written before "Files and artifacts" existed parses, with no artifacts."""
    body = ("**Background Context:** Initial session.\n\n**Current Session Summary:**\n"
            "**Topics Discussed:**\n- billing\n\n**Decisions Made:**\n- Postgres 16\n\n"
            "**Pending:**\n- migrate the billing database\n")
    s = parse_summary_body(body)
    assert s.artifacts == () and s.dropped_topics == 0
    assert s.pending == ("migrate the billing database",)


def test_artifacts_and_dropped_count_are_in_the_block() -> None:
    s = Summary("Initial session.", ("a",), ("b",), ("c",), artifacts=("src/app.py",),
                dropped_topics=3)
    block = render_summary_block(s)
    assert "**Files and artifacts:**\n- src/app.py" in block
    assert "<!-- rollchat: dropped 3 topics, 0 artifacts to fit the summary budget -->" in block
    assert parse_summary_body("\n".join(block.split("\n")[1:-2])) == s


def test_a_saved_prompt_turn_keeps_what_was_typed_beside_the_prompt() -> None:
    header = SessionHeader("a_1", datetime(2026, 12, 7, tzinfo=timezone.utc), "Assistant",
                           "config:assistant", "m", "offline", total_queries=1, total_tokens=10)
    turn = Turn("query", 1, datetime(2026, 12, 7, 5, tzinfo=timezone.utc), "Review a.py\n",
                (Text("ok"),), typed="/review a.py\n*Typed:* forged")
    text = render(Transcript(header, (turn,), None))
    assert "*Typed:* /review a.py\\n*Typed:* forged\n" in text  # one line, escaped
    assert parse(text).turns[0].typed == "/review a.py\n*Typed:* forged"
    # a file written before the field existed: the same turn, nothing typed
    old = text.replace("*Typed:* /review a.py\\n*Typed:* forged\n\n", "")
    assert parse(old).turns[0] == replace(turn, typed="")


@pytest.mark.parametrize("blocks", [
    # text written before the tool blocks, then the answer after their results
    (Text("Let me look at the config first."), ToolUse(ToolCall("c1", "read", {"p": "a"})),
     ToolResult("c1", "port: 80"), Text("It listens on port 80.")),
    # several rounds, text between each, two calls at once, a note and thinking among them
    (Thinking("which file?"), Text("Checking two files."),
     ToolUse(ToolCall("c1", "read", {"p": "a"})), ToolUse(ToolCall("c2", "read", {"p": "b"})),
     ToolResult("c1", "A"), ToolResult("c2", "B", is_error=True), Text("Now the third."),
     Note("compaction", "earlier"), ToolUse(ToolCall("c3", "read", {"p": "c"})),
     ToolResult("c3", "C"), Text("All three read.")),
    # tools first, no text before them
    (ToolUse(ToolCall("c1", "ls", {})), ToolResult("c1", "x"), Text("Done.")),
], ids=["text-then-tools", "interleaved", "tools-then-text"])
def test_blocks_keep_their_order_through_the_file(blocks: tuple[Block, ...]) -> None:
    """Issue 36 item 6: the block order (text written before tool blocks above all) checked by
    examples, as well as by the property tests above (which take minutes to meet a reorder)."""
    turn = Turn("query", 1, T0, "what port?", blocks, elapsed=1.0, usage=Usage(1, 2))
    text = render(Transcript(_header(total_queries=1, total_tokens=3), (turn,)))
    assert parse(text).turns[0].blocks == blocks
    # and the file reads in that order: each text where it was written among the calls
    body = text[text.index("**You:**"):]
    first_call = next(i for i, b in enumerate(blocks) if isinstance(b, ToolUse))
    where = [body.index(b.text) for b in blocks if isinstance(b, Text)]
    assert where == sorted(where)
    for i, b in enumerate(blocks):
        if isinstance(b, Text):
            assert (body.index(b.text) < body.index("*Tool call:*")) is (i < first_call), b


LINE_STARTS = st.sampled_from(["", "\\", "\\\\", "*", "**", "#", "-", "<", "x", " ", "*a:*",
                               "**You:** ", "## Query 1 (00:00:00)", "---", "<!-- ",
                               "<!-- restored summary: ", "*Time: "])
some_lines = st.lists(st.tuples(LINE_STARTS, st.text(max_size=6)).map(
    lambda p: "".join(p).replace("\n", "")), min_size=1, max_size=8)


@settings(max_examples=examples(150), deadline=None)
@given(some_lines)
def test_whole_text_escaping_is_line_by_line_escaping(lines: list[str]) -> None:
    """esc_lines and unesc_text look only at lines that may change (most lines of a large
    tool result are passed at C speed): they give what esc_line and unesc_line give."""
    text = "\n".join(lines)
    assert esc_lines(text) == [esc_line(x) for x in lines]
    assert unesc_text(lines) == "\n".join(unesc_line(x) for x in lines)
