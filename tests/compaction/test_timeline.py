"""The summary's Timeline: on which day a session's topics happened, written by the local
summarizer from its turns' dates, kept in the session file's summary block (older blocks without
it still read), carried down a chain of resumed sessions, restored into the child's context,
asked of a model and read back from its reply."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta, timezone
from pathlib import Path

from rollchat.compaction import timeline
from rollchat.compaction.carry import fit_words, merge_summaries
from rollchat.compaction.extractive import extractive_summary
from rollchat.compaction.prefixed import build_prefixed_request, read_summary_request, turn_days
from rollchat.compaction.request import (
    SUMMARY_SYSTEM_PROMPT,
    build_summary_request,
    parse_summary_reply,
    parse_summary_request,
)
from rollchat.domain import Message, Summary, Turn, answer_blocks
from rollchat.providers.base import ChatRequest
from rollchat.storage.store import SessionStore
from rollchat.storage.transcript import SUMMARY_END, SUMMARY_START, parse_summary_body
from rollchat.storage.transcript import render_summary_block as block
from tests.session.test_session import Recording
from tests.session.test_session_clock import at

TZ = timezone(timedelta(hours=2))
MAY_8 = datetime(2023, 5, 8, 13, 56, tzinfo=TZ)
MAY_25 = datetime(2023, 5, 25, 9, 30, tzinfo=TZ)
JUNE_9 = datetime(2023, 6, 9, 18, 0, tzinfo=TZ)


def turn(number: int, when: datetime, user: str) -> Turn:
    return Turn("query", number, when, user, answer_blocks("That sounds lovely."))


def body(summary: Summary) -> str:
    return "\n".join(block(summary).split("\n")[1:-2])  # between the markers


def test_a_chain_keeps_when_each_session_happened_and_the_child_is_told(tmp_path: Path) -> None:
    store, provider = SessionStore(tmp_path / "sessions"), Recording()
    parent: str | None = None
    for when, said in ((MAY_8, "We adopted a cat named Luna from the Portland shelter."),
                       (MAY_25, "Melanie ran a charity race for mental health in Boston.")):
        session = at(when, store, provider)
        if parent is not None:
            list(session.resume(parent))
        list(session.turn(said))
        list(session.exit())
        parent = session.state.session_id
    assert parent is not None
    # the session file's summary block holds both days, read back by the file's parser
    text = store.read_text(parent)
    assert "**Timeline:**\n- 2023-05-08: We adopted a cat named Luna from\n" in text
    (info,) = [i for i in store.list_sessions().sessions if i.session_id == parent]
    summary = store.load_summary(info)
    assert summary is not None and summary.timeline == (
        "2023-05-08: We adopted a cat named Luna from",
        "2023-05-25: Melanie ran a charity race for mental")
    # the next session is restored with them: what its model is sent names both days
    provider.requests.clear()
    third = at(JUNE_9, store, provider)
    list(third.resume(parent))
    (restore,) = provider.of("restore")
    prompt = restore.messages[-1].content
    assert prompt.index(SUMMARY_START) < prompt.index("- 2023-05-08: We adopted a cat") \
        < prompt.index("- 2023-05-25: Melanie ran") < prompt.index(SUMMARY_END)
    list(third.turn("When did we get the cat?"))
    chat = provider.of("chat")[-1]
    assert any("2023-05-08: We adopted a cat named Luna from" in m.content
               for m in chat.messages if isinstance(m.content, str))


def test_topics_are_dated_by_their_turns_and_a_day_is_merged_down_the_chain() -> None:
    first = extractive_summary(
        [turn(1, MAY_8, "I went to the LGBTQ support group with Caroline."),
         turn(2, MAY_8 + timedelta(days=1), "We painted the sunrise at Lake Tahoe.")],
        parent_summary=None, focus=None, max_words=500, fallback=False)
    assert first.timeline == ("2023-05-08: I went to the LGBTQ support group",
                              "2023-05-09: We painted the sunrise at Lake Tahoe")
    # the child's session goes on the same day: that day's item gains its topic, once
    second = extractive_summary(
        [turn(1, MAY_8 + timedelta(days=1, hours=2), "Melanie bought a kayak in Reno.")],
        parent_summary=first, focus=None, max_words=500, fallback=False)
    assert second.timeline == ("2023-05-08: I went to the LGBTQ support group",
                               "2023-05-09: Melanie bought a kayak in Reno; We painted the "
                               "sunrise at Lake Tahoe")
    # the topics themselves are as they were: the dates are their own section
    assert "We painted the sunrise at Lake Tahoe" in first.topics


def test_a_turn_without_its_time_dates_nothing() -> None:
    undated = turn(1, datetime(1970, 1, 1, tzinfo=timezone.utc), "Melanie bought a kayak in Reno.")
    summary = extractive_summary([undated], parent_summary=None, focus=None, max_words=500,
                                 fallback=False)
    assert summary.topics and summary.timeline == ()
    assert "Timeline" not in block(summary)


def test_a_block_round_trips_and_an_older_block_without_a_timeline_still_reads() -> None:
    summary = Summary("Initial session.", ("Luna the cat",), (), (), artifacts=("cat.md",),
                      timeline=("2023-05-08: Luna the cat", "2023-05-25: a race in Boston"))
    text = body(summary)
    assert "**Pending:**\n- None\n\n**Timeline:**\n- 2023-05-08: Luna the cat\n" \
           "- 2023-05-25: a race in Boston\n\n**Files and artifacts:**\n- cat.md" in text
    assert parse_summary_body(text) == summary
    older = body(replace(summary, timeline=()))  # as every file before the Timeline was
    assert "Timeline" not in older
    assert parse_summary_body(older) == replace(summary, timeline=())
    # a line of a topic that would read as the section is escaped, not taken for it
    tricky = replace(summary, background="Timeline: none yet")
    assert parse_summary_body(body(tricky)) == tricky


def test_the_oldest_days_go_first_to_fit_their_share_and_are_counted() -> None:
    days = tuple(f"2023-05-{d:02d}: Melanie went kayaking near Reno with friends" for d in
                 range(1, 21))
    summary = Summary("Initial session.", ("Kayaks",), ("Buy a kayak",), (), timeline=days)
    fitted = fit_words(summary, 200)
    assert fitted.timeline == days[-len(fitted.timeline):]  # the latest kept, in order
    assert timeline.words(fitted.timeline) <= 200 // timeline.SHARE < timeline.words(
        days[-len(fitted.timeline) - 1:])
    assert fitted.dropped_topics == len(days) - len(fitted.timeline)
    assert fitted.topics == ("Kayaks",) and fitted.decisions == ("Buy a kayak",)
    # however small the budget, the latest day stays, like the decisions: the first topic
    # goes; but a focused summary keeps its focus first, and its days go before it
    tight = fit_words(summary, 16)
    assert tight.timeline == days[-1:] and tight.topics == ()
    focused = fit_words(replace(summary, topics=("Focus on kayaks: Kayaks",)), 16, focused=True)
    assert focused.timeline == () and focused.topics == ("Focus on kayaks: Kayaks",)
    assert focused.dropped_topics == len(days)


def test_merging_partial_summaries_keeps_every_day_in_date_order() -> None:
    early = Summary("Initial session.", ("a",), (), (), timeline=("2023-05-08: the cat",))
    late = Summary("Initial session.", ("b",), (), (),
                   timeline=("2023-05-25: the race", "2023-05-08: the shelter"))
    merged = merge_summaries([early, late], 500)
    assert merged.timeline == ("2023-05-08: the shelter; the cat", "2023-05-25: the race")
    # a model's item without an ISO date is kept as written
    assert timeline.merge([["Last spring: the move"], ["2023-05-08: the cat"]]) == [
        "Last spring: the move", "2023-05-08: the cat"]


def test_a_model_is_asked_for_the_timeline_and_given_the_parents() -> None:
    assert "**Timeline:**\n- <YYYY-MM-DD: what happened>" in SUMMARY_SYSTEM_PROMPT
    parent = Summary("Initial session.", ("Luna",), (), (),
                     timeline=("2023-05-08: We adopted Luna",))
    request = build_summary_request([turn(1, MAY_25, "Melanie ran a race in Boston.")],
                                    parent_summary=parent, focus=None, model="m",
                                    max_words=300, max_output_tokens=2000)
    prompt = request.messages[-1].content
    assert '"timeline": ["2023-05-08: We adopted Luna"]' in prompt.replace("\n", "")
    assert "and its timeline." in prompt
    read = parse_summary_request(request)  # (the offline model reads it back so)
    assert read.parent_summary is not None and read.parent_summary.timeline == parent.timeline
    assert read.turns[0].started == MAY_25
    reply = (f"{SUMMARY_START}\n**Background Context:** Luna was adopted.\n\n"
             "**Current Session Summary:**\n**Topics Discussed:**\n- The race\n\n"
             "**Decisions Made:**\n- None\n\n**Pending:**\n- None\n\n"
             "## Timeline\n- 2023-05-08: We adopted Luna\n- 2023-05-25: The race in Boston\n"
             f"{SUMMARY_END}")
    summary = parse_summary_reply(reply, max_words=300)
    assert summary.timeline == ("2023-05-08: We adopted Luna", "2023-05-25: The race in Boston")
    without = reply.replace("## Timeline\n- 2023-05-08: We adopted Luna\n"
                            "- 2023-05-25: The race in Boston\n", "")
    assert parse_summary_reply(without, max_words=300).timeline == ()


def test_a_summary_request_on_the_chats_prefix_carries_its_turns_days() -> None:
    messages = (Message("user", "We adopted Luna."), Message("assistant", "Lovely."),
                Message("user", "Melanie ran a race."), Message("assistant", "Great."),
                Message("user", "We went hiking."), Message("assistant", "Nice."))
    turns = [turn(1, MAY_8, "We adopted Luna."), turn(2, MAY_8, "Melanie ran a race."),
             turn(3, MAY_25, "We went hiking.")]
    assert turn_days(turns) == ["2023-05-08: messages 1-2", "2023-05-25: messages 3-3"]
    prefix = ChatRequest("m", "You are the agent.", messages, 500)
    request = build_prefixed_request(prefix, parent_summary=None, focus=None, max_words=120,
                                     max_output_tokens=400, turns=turns)
    assert request.messages[:-1] == messages  # the prefix is untouched: only the last is new
    prompt = request.messages[-1].content
    assert '<turn-days>\n[\n"2023-05-08: messages 1-2",\n"2023-05-25: messages 3-3"\n]' in prompt
    days = [t.started.date().isoformat() for t in read_summary_request(request).turns]
    assert days == ["2023-05-08", "2023-05-08", "2023-05-25"]
    summary = extractive_summary(read_summary_request(request).turns, parent_summary=None,
                                 focus=None, max_words=500, fallback=False)
    assert [item[:10] for item in summary.timeline] == ["2023-05-08", "2023-05-25"]
    # a turn-days section that does not read dates nothing (the request still reads)
    broken = replace(request, messages=(*messages, Message("user", prompt.replace(
        '"2023-05-08: messages 1-2"', '"May 8: messages 1-2"'))))
    undated = [t.started.year for t in read_summary_request(broken).turns]
    assert undated == [1970, 1970, 2023]
    # without turns (a caller that has none) there is no section and no instruction
    plain = build_prefixed_request(prefix, parent_summary=None, focus=None, max_words=120,
                                   max_output_tokens=400).messages[-1].content
    assert "turn-days" not in plain
