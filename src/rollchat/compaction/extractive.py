"""The local extractive summary, written without a model: the offline model's summaries and
the fallback when the model's summary fails. The English it reads is providers/offline/phrases.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

from rollchat.compaction.carry import Resolutions, carried, fit_words, union
from rollchat.domain import Summary, Turn
from rollchat.storage.titles import first_line_title
from rollchat.text import named
from rollchat.text.phrases import (
    DECISION,
    FOCUS_LEAD,
    TODO,
    clean_item,
    focus_words,
    is_request,
    is_small_talk,
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
def _topics(turns: Sequence[Turn], focus: set[str]) -> list[str]:
    """One topic per query (its first real sentence), most recent first; with a focus, every
    user sentence mentioning it is a topic too."""
    found: list[str] = []
    for turn in reversed(turns):
        sentences = [s for s in prose_sentences(turn.user) if not is_small_talk(s)]
        if focus:
            found.extend(topic_phrase(s) for s in sentences if mentions_focus(s, focus))
        if sentences:
            found.append(_topic(sentences[0]))
        found.extend(tidy(s) for s in sentences[1:] if _fact(s))
    return unique(found)


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


def decided(sentence: str) -> bool:
    """A decision-like statement (not a question)."""
    return not sentence.endswith("?") and bool(
        DECISION.search(sentence) or named.DECISION_MORE.search(sentence))


def _decisions(turns: Sequence[Turn]) -> list[str]:
    """Decision-like statements: the user's first, then the assistant's (never its meta
    lines, nor a restatement of a decision the user made)."""
    users: list[str] = []
    for turn in turns:
        for sentence in prose_sentences(turn.user):
            if decided(sentence):
                users.append(tidy(sentence))
            elif named.PREFERENCE.search(sentence) and not sentence.endswith("?"):
                users.append(tidy(f"Preference: {sentence}"))
    replies = [tidy(s) for t in turns for s in prose_sentences(t.assistant, reply=True)
               if decided(s)]
    mine = unique(users)
    return mine + unique(replies, seen=mine)


def _request(turn: Turn) -> str | None:
    """The last query as a pending item when it asks for something (not small talk, a
    decision or a plain statement)."""
    sentences = prose_sentences(turn.user)
    questions = [s for s in sentences if s.endswith("?")]
    request = questions[0] if questions else next(iter(sentences), "")
    if not request or is_small_talk(request):
        return None
    if TODO.search(request):
        return tidy(request)
    if not questions and (DECISION.search(request) or not is_request(request)):
        return None  # a decision, or a statement to take note of: nothing left open
    return tidy(f"Last request: {request}")


def _pending(turns: Sequence[Turn]) -> list[str]:
    """Cut-off turns, the last request, then to-dos and next steps (most recent first)."""
    found: list[str] = []
    for turn in reversed(turns):
        first = next(iter(prose_sentences(turn.user)), "")
        if turn.status == "unanswered" and first:
            found.append(tidy(f"Unanswered: {first}"))
        elif turn.status in ("interrupted", "error") and first:
            found.append(tidy(f"Answer cut off ({turn.status}): {first}"))
    if turns and turns[-1].status == "ok":
        found.extend(item for item in [_request(turns[-1])] if item)
    done = Resolutions(turns)
    for index in range(len(turns) - 1, -1, -1):
        turn = turns[index]
        texts = (prose_sentences(turn.user), prose_sentences(turn.assistant, reply=True))
        found.extend(tidy(s) for sentences in texts for s in sentences if TODO.search(s)
                     and not named.DONE.search(s) and not done.resolved(s, after=index))
    return unique(found)


def _artifacts(turns: Sequence[Turn]) -> list[str]:
    """Paths, URLs, commands and identifiers of the turns and their tool calls, most recent
    first."""
    found: list[str] = []
    for turn in reversed(turns):
        texts = [turn.user, turn.assistant]
        for tool in turn.tools:
            texts += [str(v) for v in tool.call.arguments.values()]
            texts.append(tool.result[:2000])
        found += [clean_item(a, 8) for text in texts for a in named.artifacts(text)]
    return list(dict.fromkeys(a for a in found if a))


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
    cannot contain summary markers; an empty section is an empty tuple ("- None")."""
    queries = [turn for turn in turns if turn.kind in ("query", "carried")]
    parent = parent_summary or Summary("", (), (), ())
    background = condense(parent_summary) if parent_summary else "Initial session."
    words = focus_words(focus)
    facts = [t for t in parent.topics if named.has_named(t) and not _FOCUS_TOPIC.match(t)]
    lists = [_focus_first(found, words) for found in
             (union([_topics(queries, words), facts]),
              union([_decisions(queries), parent.decisions]),
              carried(parent.pending, _pending(queries), queries))]
    if focus and words:  # a focus of only filler ("keep the details") names nothing
        lists[0] = _focus_bullet(focus_subject(focus), lists, words)
    artifacts = union([_artifacts(queries), parent.artifacts])
    fitted = fit_words(Summary(background, tuple(lists[0]), tuple(lists[1]), tuple(lists[2]),
                               fallback, tuple(artifacts)), max_words)
    # the offline title: the first query's first line, trimmed
    title = next((t for t in (first_line_title(q.user) for q in queries) if t), None)
    return replace(fitted, title=title)
