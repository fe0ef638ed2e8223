"""The local extractive summary, written without a model: the offline model's summaries and
the fallback when the model's summary fails. The English it reads is providers/offline/phrases.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import date

from rollchat.compaction import timeline
from rollchat.compaction.carry import (
    CHARS_PER_WORD,
    HARD_FACTOR,
    LEFT_OUT_DECISIONS,
    LEFT_OUT_PENDING,
    Resolutions,
    carried,
    fit_words,
    union,
)
from rollchat.domain import Summary, Turn
from rollchat.storage.titles import first_line_title
from rollchat.text import named
from rollchat.text.phrases import (
    DECISION,
    FOCUS_LEAD,
    TODO,
    USER_TODO,
    clean_item,
    focus_words,
    haystack,
    is_request,
    is_small_talk,
    item_key,
    mentions_focus,
    prose_sentences,
    tidy,
    topic_phrase,
    unique,
)

NONE_ITEM = "None"
NOT_MENTIONED = "not mentioned in this session"
FOCUS_LABEL = "Focus on"  # the first topic of a focused summary: "Focus on X: <item>"
_FOCUS_TOPIC = re.compile(rf"^{FOCUS_LABEL} [^:]*:\s*")
# Topics and artifacts are read from the latest turn back until there are READ_AHEAD times
# the word budget of them (of named topics: ``fit_words`` drops the plain ones first): older
# ones would all be dropped, and reading them made a long session's summary slow.
READ_AHEAD = 2
# Topics naming nothing are the first ``fit_words`` drops, the oldest first: past PLAIN_ROOM
# times the word budget of them, older ones are left out unread (counted), so that a session of
# thousands of plain prompts is not compared item by item.
PLAIN_ROOM = 4
# However few named topics and artifacts a session has, they are looked for READ_TURNS turns
# back at most (topics: once the plain ones fill PLAIN_ROOM): a 500,000-turn import read every
# turn for them (bench/bench_scale.py).
READ_TURNS = 5_000


class _Read:
    """The queries of a summary, each one's sentences split when first needed: most turns of
    a long session are only searched whole (``haystack``) for what could be a decision or a
    to-do, and many are never read at all (``READ_AHEAD``)."""

    def __init__(self, turns: Sequence[Turn]) -> None:
        self.turns = turns
        self._user: dict[int, list[str]] = {}
        self._reply: dict[int, list[str]] = {}

    def user(self, index: int) -> list[str]:
        if index not in self._user:
            self._user[index] = prose_sentences(self.turns[index].user)
        return self._user[index]

    def reply(self, index: int) -> list[str]:
        if index not in self._reply:
            self._reply[index] = prose_sentences(self.turns[index].assistant, reply=True)
        return self._reply[index]


def _topics(read: _Read, focus: set[str], max_words: int,
            days: dict[str, date] | None = None) -> tuple[list[str], int]:
    """One topic per query (its first real sentence), most recent first; with a focus, every
    user sentence mentioning it is a topic too. Older turns are read only for the focus once
    the named topics hold READ_AHEAD times ``max_words``, and topics naming nothing are kept
    only until they hold PLAIN_ROOM times ``max_words`` (``fit_words`` drops them first: the
    older ones could not stay), and from then on READ_TURNS turns back at most; returns how
    many turns were not read and topics left out. ``days`` gets each topic's day (its latest
    turn's)."""
    found: list[str] = []
    named_words = plain_words = unread = 0
    plain: set[frozenset[str]] = set()  # a plain topic said again adds no words
    for index in range(len(read.turns) - 1, -1, -1):
        full = named_words >= READ_AHEAD * max_words or (
            plain_words >= PLAIN_ROOM * max_words and len(read.turns) - index > READ_TURNS)
        if full and not (focus and mentions_focus(read.turns[index].user, focus)):
            unread += 1
            continue
        sentences = [s for s in read.user(index) if not is_small_talk(s)]
        day = read.turns[index].started.date()
        if focus:
            focused = [topic_phrase(s) for s in sentences if mentions_focus(s, focus)]
            found.extend(focused)
            _date(days, focused, day)
        if full:
            continue
        new = [_topic(sentences[0])] if sentences else []
        new += [tidy(s) for s in sentences[1:] if _fact(s)]
        for topic in new:
            if named.has_named(topic):
                named_words += len(topic.split()) + 1
            elif plain_words >= PLAIN_ROOM * max_words:
                unread += 1
                continue
            elif (key := item_key(topic)) not in plain:
                plain.add(key)
                plain_words += len(topic.split()) + 1
            found.append(topic)
            _date(days, [topic], day)
    return unique(found), unread


def _date(days: dict[str, date] | None, topics: list[str], day: date) -> None:
    """Record ``day`` as the day of each of ``topics`` not yet dated (a later turn's is)."""
    if days is not None and day.year > 1970:  # (a turn read without its time has 1970)
        for topic in topics:
            days.setdefault(topic, day)


def _topic(sentence: str) -> str:
    """The topic phrase of ``sentence``, or the whole of it when the phrase would lose a
    name, a number or a path it holds."""
    phrase = topic_phrase(sentence)
    named_items = [*named.names(sentence), *named.numbers(sentence), *named.paths(sentence)]
    return phrase if all(n in phrase for n in named_items) else tidy(sentence)


def _fact(sentence: str) -> bool:
    """A statement naming a person or system, a number with its unit, or a path."""
    return not sentence.endswith("?") and bool(
        named.names(sentence) or named.numbers(sentence) or named.paths(sentence))


_DECIDING = re.compile(f"{DECISION.pattern}|{named.DECISION_MORE.pattern}", re.IGNORECASE)


def decided(sentence: str) -> bool:
    """A decision-like statement (not a question)."""
    return not sentence.endswith("?") and bool(
        DECISION.search(sentence) or named.DECISION_MORE.search(sentence))


@dataclass
class _Mined:
    """Decisions (the user's, the assistant's: per turn, latest turn first) and to-dos (most
    recent first, those a later turn resolves left out), and the words they hold."""

    users: list[list[str]] = field(default_factory=list)
    replies: list[list[str]] = field(default_factory=list)
    todos: list[str] = field(default_factory=list)
    words: int = 0

    def keep(self, users: list[str], replies: list[str], todos: list[str]) -> None:
        self.users.append(users)
        self.replies.append(replies)
        self.todos += todos
        self.words += sum(len(i.split()) + 1 for i in (*users, *replies, *todos))


def _open_task(text: str, *, user: bool) -> bool:
    """Whether ``text`` leaves something to do: a to-do, or (said by the user) a reminder,
    a commitment, something for later (``USER_TODO``)."""
    return bool(TODO.search(text) or (user and USER_TODO.search(text)))


def _turn_decisions(read: _Read, index: int, user_text: str, reply_text: str,
                    ) -> tuple[list[str], list[str]]:
    users: list[str] = []
    if _DECIDING.search(user_text) or named.PREFERENCE.search(user_text):
        for sentence in read.user(index):
            if decided(sentence):
                users.append(tidy(sentence))
            elif named.PREFERENCE.search(sentence) and not sentence.endswith("?"):
                users.append(tidy(f"Preference: {sentence}"))
    replies = [tidy(s) for s in read.reply(index) if decided(s)] \
        if _DECIDING.search(reply_text) else []
    return users, replies


def _mine(read: _Read, max_words: int) -> tuple[_Mined, bool]:
    """Decisions and to-dos, from the latest turn back until they hold READ_AHEAD times what a
    summary may keep of them (``carry.HARD_FACTOR``); whether older turns went unread."""
    mined, done = _Mined(), Resolutions(())
    for index in range(len(read.turns) - 1, -1, -1):
        if mined.words >= READ_AHEAD * HARD_FACTOR * max_words:
            return mined, True
        turn = read.turns[index]
        texts = (haystack(turn.user), haystack(turn.assistant))
        users, replies = _turn_decisions(read, index, *texts)
        asked = read.user(index) if _open_task(texts[0], user=True) else []
        sentences = [*(s for s in asked if _open_task(s, user=True)),
                     *(s for s in (read.reply(index) if TODO.search(texts[1]) else ())
                       if TODO.search(s))]
        todos = [tidy(s) for s in sentences
                 if not named.DONE.search(s) and not done.resolved(s, after=index)]
        mined.keep(users, replies, todos)
        done.add(index, turn, texts)  # after its own to-dos: they ask about later turns
    return mined, False


def _decisions(mined: _Mined, unread: bool, max_words: int) -> list[str]:
    """Decision-like statements: the user's first, then the assistant's (never its meta
    lines, nor a restatement of a decision the user made), oldest first; when they would
    fill most of what a summary may hold (``carry.HARD_FACTOR``), the oldest of the
    assistant's go, then the oldest of the user's, and a first line says so."""
    mine = unique(item for items in reversed(mined.users) for item in items)
    replies = unique((i for items in reversed(mined.replies) for i in items), seen=mine)
    room = (HARD_FACTOR - 1) * max_words
    words = sum(len(i.split()) + 1 for i in (*mine, *replies))
    chars = sum(len(i) + 3 for i in (*mine, *replies))
    cut = 0
    while (words > room or chars > room * CHARS_PER_WORD) and len(mine) + len(replies) > 1:
        gone = replies.pop(cut) if len(replies) > cut else mine.pop(0)
        words, chars = words - len(gone.split()) - 1, chars - len(gone) - 3
        unread = True
    found = mine + replies
    return [LEFT_OUT_DECISIONS, *found] if unread and found else found


def _request(turn: Turn) -> str | None:
    """The last query as a pending item when it asks for something (not small talk, a
    decision or a plain statement)."""
    sentences = prose_sentences(turn.user)
    questions = [s for s in sentences if s.endswith("?")]
    request = questions[0] if questions else next(iter(sentences), "")
    if not request or is_small_talk(request):
        return None
    if _open_task(request, user=True):
        return tidy(request)  # kept until a turn resolves it, unlike a "Last request"
    if not questions and (DECISION.search(request) or not is_request(request)):
        return None  # a decision, or a statement to take note of: nothing left open
    return tidy(f"Last request: {request}")


def _pending(read: _Read, mined: _Mined, unread: bool) -> list[str]:
    """Cut-off turns, the last request, then to-dos and next steps (most recent first). A
    message sent again and answered then is not left open (nor its first sending)."""
    found: list[str] = []
    turns = read.turns
    answered: set[str] = set()  # the messages answered, at this turn or later
    for index in range(len(turns) - 1, -1, -1):
        turn, status = turns[index], turns[index].status
        said = " ".join(turn.user.split()).casefold()
        if status == "ok" or (status == "error" and turn.assistant.strip()):
            answered.add(said)
        if status in ("unanswered", "interrupted", "error") and read.user(index) and \
                (said not in answered or status == "error"):
            first = read.user(index)[0]
            found.append(tidy(f"Unanswered: {first}" if status == "unanswered"
                              else f"Answer cut off ({status}): {first}"))
    if turns and turns[-1].status == "ok":
        found.extend(item for item in [_request(turns[-1])] if item)
    found = unique([*found, *mined.todos])
    return [*found, LEFT_OUT_PENDING] if unread and found else found


def _artifacts(turns: Sequence[Turn], max_words: int) -> list[str]:
    """Paths, URLs, commands and identifiers of the turns and their tool calls, most recent
    first, until there are READ_AHEAD times ``max_words`` words of them (READ_TURNS turns
    back at most)."""
    found: dict[str, None] = {}
    words = 0
    for turn in reversed(turns[-READ_TURNS:]):
        if words >= READ_AHEAD * max_words:
            break
        texts = [turn.user, turn.assistant]
        for tool in turn.tools:
            texts += [str(v) for v in tool.call.arguments.values()]
            texts.append(tool.result[:2000])
        for item in (clean_item(a, 8) for text in texts for a in named.artifacts(text)):
            if item and item not in found:
                found[item] = None
                words += len(item.split()) + 1
    return list(found)


def _focus_first(items: list[str], focus: set[str]) -> list[str]:
    """Items mentioning a word of the focus first (stable), so trimming keeps them."""
    if not focus:
        return items
    return sorted(items, key=lambda item: not mentions_focus(item, focus))


def focus_subject(focus: str) -> str:
    """What a focus text is about: "keep the redis details" -> "the redis details"."""
    text = " ".join(clean_item(focus, 10).split()).rstrip(" .!?;:")
    return FOCUS_LEAD.sub("", text).strip() or text


def _focus_bullet(subject: str, lists: list[list[str]], focus: set[str]) -> list[str]:
    """The topics, led by one bullet naming the focus and the first topic (else decision or
    pending item) matching it, or saying the session did not mention it."""
    topics = lists[0]
    if topics and mentions_focus(topics[0], focus):
        return [f"{FOCUS_LABEL} {subject}: {topics[0]}", *topics[1:]]
    match = next((i for items in lists[1:] for i in items if mentions_focus(i, focus)), None)
    return [f"{FOCUS_LABEL} {subject}: {match or NOT_MENTIONED}", *topics]


def condense(summary: Summary) -> str:
    """A summary in 1-2 sentences (its first topics and decisions), for Background Context."""
    def real(items: Sequence[str]) -> list[str]:
        kept = [clean_item(_FOCUS_TOPIC.sub("", i), 15).rstrip(".!?;") for i in items]
        return [i for i in kept if i and i.lower() not in (NONE_ITEM.lower(), NOT_MENTIONED)]

    topics, decisions = real(summary.topics)[:3], real(summary.decisions)[:2]
    if not topics and not decisions:
        return "The previous session had no recorded topics or decisions."
    parts = []
    if topics:
        parts.append(f"Previous session covered: {'; '.join(topics)}.")
    if decisions:
        parts.append(f"Decided: {'; '.join(decisions)}.")
    return " ".join(parts)


def extractive_summary(
    turns: Sequence[Turn],
    *,
    parent_summary: Summary | None,
    focus: str | None,
    max_words: int,
    fallback: bool,
) -> Summary:
    """A deterministic summary written without a model: topic phrases from the user's
    queries (most recent first), decision-like statements (the user's first), pending items
    (cut-off turns, the last request, to-dos), near-duplicates dropped and items matching
    ``focus`` first, the first topic naming the focus ("Focus on the parser table: ...");
    the parent condensed as background, its decisions, open tasks (until a turn resolves
    them), artifacts and topics naming something carried (``carry.fit_words`` drops topics
    first, counted, when over ``max_words``). Reply lines that only talk about
    the conversation (``is_meta_line``) are never mined. Bullets are plain single lines that
    cannot contain summary markers; an empty section is an empty tuple ("- None").
    A long session is read from its latest turn back only as far as could fit (READ_AHEAD),
    and the summary is bounded: bullets in characters (``phrases.clean_item``), decisions and
    pending items at ``carry.HARD_FACTOR`` times the budget, the oldest going first."""
    queries = [turn for turn in turns if turn.kind in ("query", "carried")]
    parent = parent_summary or Summary("", (), (), ())
    background = condense(parent_summary) if parent_summary else "Initial session."
    words = focus_words(focus)
    facts = [t for t in parent.topics if named.has_named(t) and not _FOCUS_TOPIC.match(t)]
    read = _Read(queries)
    dated: dict[str, date] = {}
    topics, unread = _topics(read, words, max_words, dated)
    mined, left_out = _mine(read, max_words)
    lists = [_focus_first(found, words) for found in
             (union([topics, facts]),
              union([_decisions(mined, left_out, max_words), parent.decisions]),
              carried(parent.pending, _pending(read, mined, left_out), queries))]
    if focus and words:  # a focus of only filler ("keep the details") names nothing
        lists[0] = _focus_bullet(focus_subject(focus), lists, words)
    artifacts = union([_artifacts(queries, max_words), parent.artifacts])
    when = timeline.merge([parent.timeline, timeline.day_items(topics, dated)])
    fitted = fit_words(Summary(background, tuple(lists[0]), tuple(lists[1]), tuple(lists[2]),
                               fallback, tuple(artifacts), dropped_topics=unread,
                               timeline=tuple(when)), max_words,
                       focused=bool(focus and words))
    # the offline title: the first query's first line, trimmed
    title = next((t for t in (first_line_title(q.user) for q in queries) if t), None)
    return replace(fitted, title=title)
