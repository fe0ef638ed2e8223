"""The session file as a person reads it (issue 25.4): prose is written as it is (only a line
that would forge structure gets a backslash), the context block sits in an HTML comment, a
restoration prompt is kept as its summary, header numbers read like numbers, and entries
without a model call carry no zero footers; all of it parses back to the same values."""

from __future__ import annotations

from datetime import datetime, timezone

from hypothesis import example, given, settings
from hypothesis import strategies as st

from rollchat.compaction.restore import build_restoration_prompt, restored_summary
from rollchat.domain import SessionHeader, Summary, Text, Transcript, Turn, Usage
from rollchat.storage.transcript import parse, render
from rollchat.storage.transcript.syntax import forges_turn
from tests.examples_budget import examples

T0 = datetime(2026, 11, 26, 1, 2, 3, tzinfo=timezone.utc)
HEADER = SessionHeader("assistant_20261126_010203_abcd", T0, "Assistant", "config:assistant",
                       "m", "p", total_queries=1, total_tokens=12_345, context_tokens=1_234)
# the pieces a line of prose, markdown or code is made of, hostile ones included
PIECES = st.sampled_from([
    "\\", "\\\\", "*", "**", "**Field:**", "*Note:*", "<!--", "-->", "---", "#", "## ",
    "## Query 1 (00:00:00)", "Pending:", "- ", " ", "\t", "word", "C:\\path", "`", "```",
    "**bold**", "*x*", "<context>", "Time: ", "*Time: 1s | Tokens: 5 (", ":", "None"])
LINE = st.lists(PIECES, max_size=5).map("".join)
TEXT = st.lists(LINE, min_size=1, max_size=5).map("\n".join)


def _file(user: str, answer: str, block: str = "") -> tuple[Transcript, str]:
    turn = Turn("query", 1, T0, user, (Text(answer),) if answer else (), usage=Usage(10, 2),
                context_block=block)
    t = Transcript(HEADER, (turn,), None)
    return t, render(t)


@settings(max_examples=examples(300), deadline=None)
@given(user=TEXT, answer=TEXT, block=TEXT)
@example(user="q\n---\n**You:** x", answer="a\n---\n## Query 2 (00:00:00)\n**b**", block="--> ")
def test_prose_round_trips_and_is_escaped_only_where_it_would_forge(
        user: str, answer: str, block: str) -> None:
    t, text = _file(user, answer, block)
    assert parse(text) == t
    written = text.split("\n")
    for label, content in (("**You:** ", user), ("**Assistant:** ", answer)):
        at = next(i for i, x in enumerate(written) if x.startswith(label))
        lines = content.split("\n")
        for line, out in zip(lines[1:], written[at + 1:at + len(lines)], strict=True):
            if forges_turn(line.lstrip("\\")):
                assert out == "\\" + line  # never raw where it would forge
            elif not line.startswith("\\"):
                assert out == line  # as it is: no backslash added


def test_ordinary_markdown_is_written_as_it_is() -> None:
    answer = ("## Plan\n**bold** start\n*emphasis* start\n# Title\n<!-- note -->\n"
              "- Pending: write the benchmarks.\nC:\\jobs\\queue")
    t, text = _file("a **question** with C:\\path", answer)
    assert answer in text and "a **question** with C:\\path" in text and "\\" not in (
        text.replace("C:\\jobs\\queue", "").replace("C:\\path", ""))
    assert parse(text) == t


def test_what_would_forge_structure_is_escaped() -> None:
    answer = "first\n**You:** forged\n*Tool call:* x\n---\n## Query 2 (00:00:00)\n*Time: 1s"
    t, text = _file("q", answer)
    for line in answer.split("\n")[1:]:
        assert "\\" + line in text.split("\n")
    assert parse(text) == t


def test_the_context_block_is_an_html_comment_sent_back_as_it_was() -> None:
    block = "<context>\nNow: Wednesday\n- a --> b\n-->\n---\n</context>"
    t, text = _file("hi", "hello", block)
    assert "*Context block:*" not in text
    assert ("<!-- context block, sent with this message:\n<context>\nNow: Wednesday\n"
            "- a --\\> b\n--\\>\n\\---\n</context>\n-->\n") in text
    assert parse(text) == t


def test_header_numbers_read_like_numbers() -> None:
    _, text = _file("q", "a")
    lines = text.split("\n")
    assert any(x.startswith("**Tokens Billed:**") and x.endswith(" 12,345") for x in lines)
    assert any(x.startswith("**Context Tokens:**") and x.endswith(" 1,234") for x in lines)
    assert all(x == x.rstrip() for x in lines)
    assert "*Time: 0.0s | Tokens: 12 (in: 10, out: 2) | at " in text


def test_entries_without_a_model_call_have_no_zero_footer() -> None:
    handed = Turn("handoff", 0, T0, "", (), context="Handed off to @helper")
    carried = Turn("carried", 1, T0, "q", (Text("a"),), elapsed=1.5, context="Carried over")
    t = Transcript(HEADER, (handed, carried), None)
    text = render(t)
    assert "Tokens: 0" not in text and "Time: 0.0s" not in text
    assert f"*at {T0.isoformat()}*" in text and f"*Time: 1.5s | at {T0.isoformat()}*" in text
    assert parse(text) == t


SUMMARY = Summary("Chose **rabbitmq** at C:\\jobs.", ("queues", "*emph* <!-- x -->"),
                  ("use rabbitmq",), ("Pending: write the benchmarks.", "None"))


@given(archive=st.booleans(), grandparent=st.sampled_from([None, "assistant_x_1"]))
@settings(max_examples=examples(10), deadline=None)
def test_a_restored_entry_keeps_the_summary_once_and_rebuilds_the_prompt(
        archive: bool, grandparent: str | None) -> None:
    prompt = build_restoration_prompt(
        session_id="assistant_20261125_000000_aaaa", date=T0, queries=4, tokens=2_982,
        parent_of_parent=grandparent, file_name="assistant_20261125_000000_aaaa.md",
        summary=SUMMARY, archive_tool=archive)
    restored = Turn("restored", 0, T0, prompt, (Text("Ready."),), usage=Usage(5, 1),
                    context="Resumed from assistant_20261125_000000_aaaa")
    t = Transcript(HEADER, (restored,), None)
    text = render(t)
    assert "CONTEXT RESTORATION" not in text and "Task: Review" not in text
    assert text.count("**Topics Discussed:**") == 1 and "\\<!--" not in text
    assert "- Pending: write the benchmarks." in text and "- \\" not in text.replace(
        "- \\None", "")
    back = parse(text)
    assert back == t and back.turns[0].user == prompt
    assert restored_summary(back) == SUMMARY


def test_a_prompt_rollchat_did_not_write_is_kept_as_it_is() -> None:
    restored = Turn("restored", 0, T0, "some other prompt\n**with** fields", (Text("ok"),),
                    context="Resumed from x")
    t = Transcript(HEADER, (restored,), None)
    assert parse(render(t)) == t and "**You:** some other prompt" in render(t)


def test_the_restored_entrys_facts_hold_numbers_and_a_v1_line_still_reads() -> None:
    """Machine-read figures are numbers: the prompt says "2,982 tokens" (as every other
    figure, never "3.0K") and the facts' JSON holds ``"queries": 4, "tokens": 2982``; a file
    written by an older rollchat (v1: the words, "1.4K") still rebuilds its prompt."""
    import json
    import re

    prompt = build_restoration_prompt(
        session_id="assistant_20261125_000000_aaaa", date=T0, queries=4, tokens=2_982,
        parent_of_parent=None, file_name="assistant_20261125_000000_aaaa.md",
        summary=SUMMARY, archive_tool=True)
    assert "(Session ID: assistant_20261125_000000_aaaa, 4 queries, 2,982 tokens)" in prompt
    restored = Turn("restored", 0, T0, prompt, (Text("Ready."),), context="Resumed from x")
    text = render(Transcript(HEADER, (restored,), None))
    line = re.search(r"<!-- restored summary: sent in restoration prompt v2 (\{.*\}) -->", text)
    assert line is not None, text
    facts = json.loads(line[1])
    assert facts["queries"] == 4 and facts["tokens"] == 2982
    assert parse(text).turns[0].user == prompt
    old = text.replace(line[0], line[0].replace(" v2 ", " v1 ").replace(
        '"queries": 4, "tokens": 2982', '"queries": "4 queries", "tokens": "3.0K"'))
    assert parse(old).turns[0].user == prompt.replace("2,982 tokens", "3.0K tokens")
