"""The built-in offline model: deterministic, no network, streaming word by word.

It answers chat by reflecting the conversation (and recall questions about it from the
history), writes summaries with the extractive summarizer (streamed line by line),
acknowledges restored summaries, and uses ``session_archive_read`` when asked.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator, Sequence
from dataclasses import replace
from datetime import datetime, timezone

from rollchat.domain import Message, Summary, ToolCall, Turn, Usage, answer_blocks
from rollchat.memory.layers import split_block
from rollchat.models.tokens import TokenCounter
from rollchat.providers import OFFLINE
from rollchat.providers.base import (
    ChatRequest,
    Done,
    StreamEvent,
    TextDelta,
    ToolCallEvent,
    UsageEvent,
)
from rollchat.providers.content import all_sendable
from rollchat.providers.offline import tooluse
from rollchat.session.handed import split_handed
from rollchat.storage.transcript import SUMMARY_START, parse_summary_body, render_summary_block
from rollchat.text import phrases
from rollchat.tools import ARCHIVE_TOOL_NAME as ARCHIVE_TOOL

RESTORE_MARK = "CONTEXT RESTORATION"
_STOPWORDS = frozenset((
    "the", "and", "for", "are", "but", "not", "you", "your", "with", "this", "that", "have",
    "has", "had", "was", "were", "what", "when", "where", "which", "who", "why", "how", "can",
    "could", "would", "should", "will", "about", "from", "into", "does", "did", "our", "their",
    "there", "then", "than", "them", "they", "its", "it's", "i'm", "let's", "please", "tell",
    "more", "some", "any", "all", "just", "like", "also", "again", "said", "say", "know",
    "think", "want", "need", "make", "use", "get", "let", "one", "now", "yes", "okay", "thanks",
    "hello", "hey", "remind", "earlier", "before", "previous", "session", "discussed",
    "mention", "mentioned", "here", "here's", "what's", "that's", "talked", "talking",
    "talk", "discuss", "discussing", "cover", "covered", "far", "saying", "asking", "typed",
    "wrote", "told",
))
_PERSON = {"i am": "you are", "am i": "are you", "i was": "you were", "was i": "were you",
           "i": "you", "i'm": "you're", "i've": "you've", "i'll": "you'll", "i'd": "you'd",
           "me": "you", "my": "your", "mine": "yours", "myself": "yourself"}
# The longest forms first, so "I am" becomes "you are", never "you am".
_FIRST_PERSON = re.compile(
    r"\b(?:I\s+am|am\s+I|I\s+was|was\s+I|I'm|I've|I'll|I'd|I|me|my|mine|myself)\b",
    re.IGNORECASE)
OFFLINE_NOTE = ("_(I'm the offline model: no API key is configured, so I can only reflect "
                "our conversation back to you.)_")
# A summary streams a line at a time: each line waits LINE_WORDS word delays, and the whole
# summary at most SUMMARY_SECONDS, so exit and compact stay quick with any word delay.
LINE_WORDS = 3
SUMMARY_SECONDS = 1.0
_JUST_SAID = re.compile(
    r"\b(?:did|have)\s+i\s+(?:just|last)\s+(?:say|type|write|ask)|\bwhat\s+(?:did|have)\s+"
    r"i\s+(?:say|said|type|typed|write|wrote|ask|asked)\s*(?:\?|$)|"
    r"\bmy (?:last|previous) (?:message|question)|\bwhat was i (?:saying|asking)",
    re.IGNORECASE)
_OVERVIEW = re.compile(
    r"\bwe\b.*\b(?:talk|talked|talking|discuss|discussed|discussing|cover|covered|say|said|"
    r"decide|decided)\b\s*(?:so far\s*)?(?:\?|$)", re.IGNORECASE)
_GREETINGS = frozenset(("hi", "hello", "hey", "hiya", "yo", "morning", "evening", "greetings"))


def salient_words(text: str, limit: int = 5) -> list[str]:
    """The distinctive words of ``text``, in order: no stopwords, at least 3 characters."""
    words = re.findall(r"[A-Za-z0-9_][A-Za-z0-9_.\-/']*[A-Za-z0-9_]", text.lower())
    kept = [w for w in words if len(w) >= 3 and w not in _STOPWORDS]
    return list(dict.fromkeys(kept))[:limit]


def _mentions(text: str, words: Sequence[str]) -> int:
    lowered = text.lower()
    return sum(1 for word in words if re.search(rf"(?<![\w]){re.escape(word)}(?![\w])", lowered))


def _first_sentence(text: str, limit: int = 160) -> str:
    line = " ".join(re.split(r"(?<=[.!?])\s", text.strip(), maxsplit=1)[0].split())
    return line if len(line) <= limit else line[:limit].rstrip() + "..."


def _best_line(text: str, words: Sequence[str]) -> str | None:
    scored = [(_mentions(line, words), line.strip()) for line in text.splitlines() if line.strip()]
    best = max(scored, key=lambda pair: pair[0], default=(0, ""))
    return _first_sentence(best[1], 200) if best[0] else None


def _summary_in(text: str) -> Summary | None:
    from rollchat.compaction import request as summary_request  # (imported on first use)

    try:
        return parse_summary_body(summary_request.extract_block(text))
    except Exception:  # no block, or not a well-formed one
        return None


class OfflineProvider:
    """A real, deterministic model that needs no key and no network (see module docstring)."""

    name = OFFLINE

    def __init__(self, word_delay: float = 0.0) -> None:
        self.word_delay = word_delay
        self._counter: TokenCounter | None = None

    @property
    def counter(self) -> TokenCounter:
        if self._counter is None:
            self._counter = TokenCounter(OFFLINE)
        return self._counter

    def stream(self, request: ChatRequest) -> Iterator[StreamEvent]:
        if request.purpose == "summary":
            reply, call = self._summary(request), None
        elif request.purpose == "restore":
            reply, call = self._restore(request), None
        elif request.purpose == "memory":  # facts to remember: the phrase rules, as JSON
            from rollchat.memory.extract import answer_offline

            reply, call = answer_offline(request), None
        else:
            reply, call = self._chat(request)
        pieces, delay = self._pieces(reply, by_line=request.purpose in ("summary", "memory"))
        for index, piece in enumerate(pieces):
            if index and delay > 0:
                time.sleep(delay)
            yield TextDelta(piece)
        if call is not None:
            yield ToolCallEvent(call)
        input_tokens = self.counter.count_messages(request.system, request.messages,
                                                   request.tools)
        output_tokens = self.counter.count_text(reply) + (8 if call else 0)
        yield UsageEvent(Usage(input_tokens=input_tokens, output_tokens=output_tokens))
        yield Done("tool_use" if call else "end")

    def _pieces(self, reply: str, *, by_line: bool) -> tuple[list[str], float]:
        """The deltas of ``reply`` (words, or lines for a summary) and the delay between."""
        if not by_line:
            return re.findall(r"\s*\S+\s*", reply) or [reply], self.word_delay
        lines = re.findall(r"[^\n]+\n*|\n+", reply) or [reply]
        return lines, min(self.word_delay * LINE_WORDS, SUMMARY_SECONDS / len(lines))

    # ------------------------------------------------------------ summary and restore

    def _summary(self, request: ChatRequest) -> str:
        from rollchat.compaction import extractive
        from rollchat.compaction.prefixed import read_summary_request

        data = read_summary_request(request)
        summary = extractive.extractive_summary(
            data.turns, parent_summary=data.parent_summary, focus=data.focus,
            max_words=data.max_words, fallback=False,
        )
        block = render_summary_block(summary)
        if summary.title:  # the model's title line opens the block (see request.py)
            start, _, rest = block.partition("\n")
            block = f"{start}\n**Title:** {summary.title}\n\n{rest}"
        return block

    def _restore(self, request: ChatRequest) -> str:
        prompt = next((m.content for m in reversed(request.messages) if m.role == "user"), "")
        summary = _summary_in(prompt)
        if summary is None:
            return "I could not find a summary of the previous session. Ready to start fresh!"

        return _acknowledgment(summary)

    # ------------------------------------------------------------ chat

    def _chat(self, request: ChatRequest) -> tuple[str, ToolCall | None]:
        # each user message's context block (date, remembered facts) is context, not what the
        # user said: the offline model reflects the user's own words
        # the offline model sees no images: each is a line of text saying so
        messages = [replace(m, content=split_block(m.content)[1]) if m.role == "user" else m
                    for m in all_sendable(request.messages, images=False)]
        users = [i for i, m in enumerate(messages) if m.role == "user"]
        if not users:
            return "Hello! I'm the offline model. What would you like to talk about?", None
        last = users[-1]
        if messages[-1].role == "tool":
            tool = tooluse.last_tool_name(messages)
            if tool != ARCHIVE_TOOL:
                return tooluse.answer_from_result(messages[-1].content, tool), None
            return _answer_from_tool(messages[-1].content, messages[last].content), None
        requested = tooluse.requested_call(messages[last].content, request.tools,
                                            f"offline_call_{len(messages)}")
        if requested is not None:
            return requested
        handed, latest = split_handed(messages[last].content)
        latest = phrases.plain_text(latest)
        history = [*messages[:last], *([Message("user", handed)] if handed else [])]
        wanted = tooluse.asked_tool(latest, request.tools, skip=(ARCHIVE_TOOL,))
        rest: str | None = None  # a plain request's text to work on
        if wanted is None:
            wanted, rest = tooluse.plain_request(latest, request.tools, skip=(ARCHIVE_TOOL,))
        if wanted is not None:
            call = tooluse.tool_call(latest, wanted, f"offline_call_{len(messages)}", rest)
            return f"Let me use {wanted.name}.", call
        recall = _recall_answer(history, latest)
        if recall is not None:
            return f"{recall}\n\n{OFFLINE_NOTE}", None
        words = salient_words(latest)
        if not words and len(latest.split()) <= 4:
            return ("Hello! I'm the offline model (no API key is configured). "
                    "What would you like to talk about?"), None
        restored = [m for m in messages[:last] if m.role == "user" and _is_restoration(m)]
        summary = _summary_in(restored[-1].content) if restored else None
        found = _recall(history, words)
        if not found and summary is not None:
            line = _best_line("\n".join(_summary_lines(summary)), words)
            if line:
                found = [f'The summary of our previous session says: "{line}"']
            elif (any(tool.name == ARCHIVE_TOOL for tool in request.tools) and words
                  and phrases.asks_about_earlier(latest)):
                call = ToolCall(f"offline_call_{len(messages)}", ARCHIVE_TOOL,
                                {"query": " ".join(words)})
                text = f"Let me look for {_bold(words)} in the previous session's transcript."
                return text, call
        return _compose(latest, words, found), None


def _recall_answer(history: Sequence[Message], latest: str) -> str | None:
    """The answer to a question about the conversation itself: what the user just said, or
    what we have talked about so far; None for any other message (a question about a subject,
    "what did I say about X?", is answered by quoting, in ``_chat``)."""
    if not phrases.is_recall_question(latest) or salient_words(latest):
        return None
    users = [m for m in history if m.role == "user" and not _is_restoration(m)]
    if _JUST_SAID.search(latest) and not _OVERVIEW.search(latest):
        if not users:
            return "You haven't said anything before this in our conversation."
        said = " ".join(phrases.plain_text(users[-1].content).split())
        return f'You just said: "{_first_sentence(said, 300) if said else users[-1].content}"'
    return _overview(history)


def _history_turns(history: Sequence[Message]) -> list[Turn]:
    """The user's queries in ``history`` with the replies that followed, as turns."""
    when = datetime(1970, 1, 1, tzinfo=timezone.utc)
    turns: list[Turn] = []
    for message in history:
        if message.role == "user" and not _is_restoration(message):
            turns.append(Turn("query", len(turns) + 1, when, message.content, ()))
        elif message.role == "assistant" and turns:
            last = turns[-1]
            turns[-1] = Turn("query", last.number, when, last.user,
                             answer_blocks(f"{last.assistant}\n{message.content}".strip()))
    return turns


def _overview(history: Sequence[Message]) -> str:
    """The topics (and decisions) so far, from the extractive summarizer, oldest first, and
    those of a restored previous session."""
    from rollchat.compaction import extractive

    summary = extractive.extractive_summary(_history_turns(history), parent_summary=None,
                                            focus=None, max_words=200, fallback=False)
    topics = "; ".join(t.rstrip(".!?;") for t in reversed(summary.topics))
    lines = [f"So far we've talked about: {topics}." if topics
             else "We haven't talked about anything specific yet in this session."]
    if summary.decisions:
        lines[0] += f" Decided: {'; '.join(d.rstrip('.!?;') for d in summary.decisions)}."
    restored = [m for m in history if m.role == "user" and _is_restoration(m)]
    previous = _summary_in(restored[-1].content) if restored else None
    if previous is not None and _listed(previous.topics, 3):
        lines.append(f"Before this session: {_listed(previous.topics, 3)}.")
    return "\n\n".join(lines)


def _listed(items: Sequence[str], count: int) -> str:
    """Up to ``count`` real items, without labels, noise or end punctuation, "; "-joined."""
    real = [re.sub(r"^(?:Last request|Unanswered):\s*", "", i).rstrip(".!?;") for i in items]
    return "; ".join([i for i in real if i.lower() != "none" and not phrases.is_noise(i)]
                     [:count])


def _is_restoration(message: Message) -> bool:
    return RESTORE_MARK in message.content or SUMMARY_START in message.content


def _summary_lines(summary: Summary) -> list[str]:
    return [summary.background, *summary.topics, *summary.decisions, *summary.pending]


def _bold(words: Sequence[str]) -> str:
    return ", ".join(f"**{word}**" for word in words)


def _recall(history: Sequence[Message], words: Sequence[str]) -> list[str]:
    """Up to two earlier messages (most recent first) that mention ``words``, as quotes;
    the model's own replies only when no user message does, and never their meta lines."""
    if not words:
        return []
    quotes: list[str] = []
    for who, role in (("you said", "user"), ("I said", "assistant")):
        for message in reversed(history):
            if message.role == role and not _is_restoration(message):
                text = message.content
                if role == "assistant":
                    lines = text.splitlines()
                    text = "\n".join(line for line in lines if not phrases.is_meta_line(line))
                line = _best_line(text, words)
                if line and len(quotes) < 2:
                    quotes.append(f'Earlier {who}: "{line}"')
        if quotes:
            break
    return quotes


def _restate(text: str) -> str:
    """The first sentence of ``text`` seen from the other side ("my" becomes "your", "I am"
    becomes "you are", "am I" becomes "are you")."""
    sentence = _first_sentence(text).rstrip(".!")
    swapped = _FIRST_PERSON.sub(lambda m: _PERSON[" ".join(m.group(0).lower().split())],
                                sentence)
    return swapped if swapped.endswith("?") else swapped + "."


def _listing(words: Sequence[str]) -> str:
    bold = [f"**{word}**" for word in words]
    return bold[0] if len(bold) == 1 else f"{', '.join(bold[:-1])} and {bold[-1]}"


def _compose(latest: str, words: Sequence[str], found: Sequence[str]) -> str:
    """A reply: what the message was about (a request) or a restatement (a statement), the
    earlier messages it connects to, and the one-line offline note."""
    request = phrases.is_request(latest)
    if request:
        parts = [f"You asked about {_listing(words)}." if words
                 else "You asked something I can't pick out offline."]
    else:
        parts = [f"Noted: {_restate(latest)}"]
    if found:
        parts.append("\n".join(f"- {item}" for item in found))
    elif request and words:
        parts.append("Nothing earlier in our conversation mentions it, and offline I can't "
                     "work out a new answer.")
    parts.append(OFFLINE_NOTE)
    return "\n\n".join(parts)


def _main_first(topics: Sequence[str]) -> list[str]:
    """Topics with the session's main subject kept near the front: the first (most recent,
    or the focus) topic, then the oldest real one (what the session set out to do), then the
    rest, so a short listing never drops the subject the session started with."""
    real = [t for t in topics if _listed([t], 1)]
    if len(real) <= 2:
        return real
    return [real[0], real[-1], *real[1:-1]]


def _acknowledgment(summary: Summary) -> str:
    """2-6 sentences: the topics, decisions and open items of a restored summary, and
    readiness."""
    sentences = ["I've reviewed the summary of our previous session."]
    if _listed(_main_first(summary.topics), 3):
        sentences.append(f"Main topics: {_listed(_main_first(summary.topics), 3)}.")
    if _listed(summary.decisions, 2):
        sentences.append(f"Decided: {_listed(summary.decisions, 2)}.")
    if _listed(summary.pending, 2):
        sentences.append(f"Still open: {_listed(summary.pending, 2)}.")
    sentences.append("Ready to continue where we left off.")
    return " ".join(sentences)


def _answer_from_tool(result: str, question: str) -> str:
    words = salient_words(question)
    line = _best_line(result, words)
    if line is None:
        return f"The previous session's transcript has nothing about {_bold(words)} either."
    return f"From the previous session's transcript:\n\n> {line}\n\nThat's what I found."
