"""Sentence-level phrase data: patterns and word sets, and the predicates built on them (is this
a decision, a to-do, small talk, a recall question, a request...). Used by the offline model
and the extractive summarizer; text.named finds items *inside* sentences."""

from __future__ import annotations

import re
from collections.abc import Iterable

from rollchat.text.named import ADVERB
from rollchat.text.near import NearIndex

ITEM_WORDS = 25  # longest bullet the extractive summarizer writes
TOPIC_WORDS = 10  # a topic longer than this is cut to a phrase (exact names kept)
WORD_CHARS = 200  # a longer "word" in a bullet is cut (long URLs and paths still fit)
ITEM_CHARS = 500  # the longest bullet, in characters
_SMALL_TALK = frozenset((
    "hi", "hello", "hey", "hiya", "yo", "thanks", "thank", "you", "thx", "ok", "okay", "cool",
    "great", "nice", "good", "morning", "evening", "afternoon", "bye", "goodbye", "cheers",
    "yes", "no", "sure", "please", "exit", "quit", "here", "there", "this", "that", "it",
    "so", "well", "hmm", "yep", "yeah", "nope", "right", "alright", "fine", "lol", "test",
    "testing", "again", "done", "got", "see", "i", "is", "all", "awesome", "perfect", "bye",
    "now", "what", "huh",
))
DECISION = re.compile(
    r"\b(?:decided(?: to| on| that| against|:)|decide to|the decision is|we'll|we will|"
    r"we are going to|we're going to|"
    r"let's|let us|go with|going with|went with|agreed|agree to|settle on|settled on|"
    r"switch to|switched to|chose|opt for|opted for|stick with|we use|we're using|"
    r"(?:should|must) use|use \S+(?: \S+){0,2}? (?:for|as|instead of)|"
    r"(?:should|must|will) be (?:set to |at most |at least |capped at |limited to )?"
    r"(?:\d|`|\"|'|(?:true|false|on|off|enabled|disabled|required|optional)\b))",
    re.IGNORECASE,
)
TODO = re.compile(
    r"\b(?:todo|to-do|fixme|tbd|next step|next steps|next,|next up|next we|still need|"
    r"still needs|need to|needs to|remaining|not yet|pending|follow up|follow-up|"
    r"open question|unresolved|come back to|tomorrow|don't forget|do not forget|remember to|"
    r"action item|on my list|at some point|haven't (?:yet )?\w+ed)\b",
    re.IGNORECASE,
)
# What leaves a task open when the user says it (the assistant says "I'll ..." of its next
# step all the time, so this is never read in replies): reminders ("remind me to email the
# auditors about the soc2 report"), the user's own commitments ("ok, i'll just create a script
# to run it"), "later", what they did not get to or forgot. Real phrasings, each with its
# source, in tests/text/data/phrasings.json.
USER_TODO = re.compile(
    r"\bremind me\b(?!\W*(?:again\W+)?(?:what|which|who|whom|where|when|why|how|of)\b)|"
    rf"\b(?:i(?:'ll|’ll| will| shall)|i(?:'m|’m| am) {ADVERB}going to|(?:i|we) {ADVERB}plan to|"
    r"(?:i|we)(?:'ll|’ll| will) need)\b|"
    r"\b(?:can|could|would|will) you\b[^.!?]*\blater\b|\blater (?:on|today|tonight|this week)\b|"
    r"\b(?:did(?:n't|n’t|nt| not)|never) (?:get|got) (?:around )?to\b|\bforgot to\b|"
    r"\bin the future\b|\bwhen (?:i|we|you) (?:get|have) (?:a |the )?(?:chance|time)\b",
    re.IGNORECASE,
)
# Lines that talk about the conversation rather than its content: the offline model's
# phrasings (providers/offline) and quotes of earlier text. Never mined from replies.
_META = re.compile(
    r"^(?:you asked about|noted\b|got it\b|earlier (?:you|i) said|hello\b|hi\b|"
    r"the summary of our previous session says|from the previous session's transcript|"
    r"let me look for|that's what i found|this is the first time\b|nothing earlier\b|"
    r"i've reviewed the summary|i've read the summary|you just said|"
    r"you haven't said anything|so far we've talked about|we haven't talked about|"
    r"before this session\b)"
    r"|offline model|no api key|offline,? i can't|transcript has nothing about",
    re.IGNORECASE,
)
_LABEL = re.compile(r"^(?:last request|unanswered|answer cut off \(\w+\)|todo|to-do|fixme|"
                    r"next steps?|next)\s*:\s*", re.IGNORECASE)
_LEAD = re.compile(
    r"^(?:(?:ok(?:ay)?|so|well|also|and|now|hi|hey|please|btw|right)[,!.]?\s+)*"
    r"(?:(?:let'?s|let us|can we|could we|i (?:want|need|would like|'d like) to) "
    r"(?:talk|chat|think|speak) (?:about|over|through) |"
    r"(?:can|could|would|will) you (?:please )?|i(?:'m| am) (?:working on|trying to) |"
    r"i(?:'m| am) (?=\w+ing\b)|"
    r"i (?:want|need|would like|'d like) "
    r"(?:you )?to |let's |let us |we (?:decided|agreed|need|have|want) to |we'll |we will |"
    r"(?:we )?still need to |todo:?\s*|fixme:?\s*|next steps?:\s*|next,?\s+|"
    r"what about |how about |tell me about |explain |here's |here is |here are )?",
    re.IGNORECASE,
)
_FILLER = re.compile(r"^(?:(?:ok(?:ay)?|so|well|also|and|now|right|alright|hmm|great|"
                     r"good|cool|fine|sure|yes|btw)[,!.]?\s+)+(?=\w)", re.IGNORECASE)
NAME = re.compile(r"`[^`]+`|(?<!\S)\S*[./_\\:\d]\S*|\b[a-z]+[A-Z]\w*|\b[A-Z]\w*[A-Z]\w*")
_FOCUS_STOP = frozenset((
    "the", "and", "for", "with", "about", "keep", "focus", "detail", "details", "all",
    "everything", "important", "stuff", "things", "info", "information", "mention", "remember",
    "especially", "only", "our", "what", "that", "this", "those", "these", "from", "into",
))
_FENCE = re.compile(r"^[ \t]*(```|~~~).*?(?:^[ \t]*\1[^\n]*$|\Z)", re.DOTALL | re.MULTILINE)
_INLINE_FENCE = re.compile(r"```.*?(?:```|$)", re.DOTALL)
_COMMENT = re.compile(r"<!--.*?(?:-->|$)", re.DOTALL)
_MARKER = re.compile(r"SESSION_SUMMARY_(?:START|END)", re.IGNORECASE)
_EDGE_UNDERSCORE = re.compile(r"(?<!\w)_+|_+(?!\w)")
_MARKUP_ONLY = re.compile(r"^[\s|:=*_#>`~+\-]*$")
_CODE_LINE = re.compile(r"^(?: {4}|\t).*[(){};=<>]")
# A summary block's section heading quoted in a message: structure, never content.
_SUMMARY_HEADING = re.compile(r"^[\s#*_>\\-]*(?:background context|current session summary|"
                              r"topics discussed|decisions made|pending|files and artifacts)"
                              r"[\s*_]*:", re.IGNORECASE)
# Questions about the conversation itself ("what did I just say?", "which editor did I
# mention?", "remind me what we said"): answered from the history, never a topic.
_RECALL_LEAD = re.compile(
    r"^\W*(?:(?:ok(?:ay)?|so|and|hey|hmm|wait|please|now)[,!.]?\s+)*"
    r"(?:what|which|who|remind|do you (?:remember|recall)|can you (?:remind|repeat|recall|"
    r"tell me what)|could you (?:remind|repeat)|repeat|recall|tell me what)\b", re.IGNORECASE)
_RECALL_VERB = re.compile(
    r"\b(?:(?:did|have|had)\s+(?:i|we)\s+(?:just\s+|already\s+|last\s+)?"
    r"(?:say|mention|ask|talk|discuss|tell|type|write|cover)|"
    r"(?:i|we)\s+(?:just\s+|already\s+|last\s+)?(?:said|mentioned|asked|talked|discussed|"
    r"told|typed|wrote|covered)|(?:was i|were we)\s+(?:saying|asking|talking|discussing)|"
    r"my (?:last|previous) (?:message|question))\b", re.IGNORECASE)
# A question about what was chosen that names no subject after its verb ("what crate did
# we pick?", "which port did we settle on in the end?"); "what did we decide about the
# cache?" has a subject, so it stays a real question (a topic).
_CHOICE_RECALL = re.compile(
    r"^\W*(?:(?:ok(?:ay)?|so|and|hey|hmm|wait|now)[,!.]?\s+)*(?:what|which|who)\b"
    r"(?:\s+[\w'-]+){0,3}?\s+(?:did|have|had)\s+(?:i|we)\s+(?:finally\s+|already\s+)?"
    r"(?:pick(?:ed)?|cho(?:o)?se|chosen|decide(?:d)?(?: on)?|settle(?:d)? on|agree(?:d)? on|"
    r"go with|gone with|land(?:ed)? on|opt(?:ed)? for|use(?:d)?|name(?:d)?)"
    r"(?:\s+(?:in the end|again|earlier|before|last time))?\s*[?.!]*$", re.IGNORECASE)
# "Remind me: what ...?", "remind me which ...": a recall question whatever its verb.
_REMIND_ME = re.compile(r"^\W*(?:\w+[,!.]?\s+){0,2}?remind me\b[\s:,\-]*"
                        r"(?:again\s+)?(?:what|which|who|where|when|why)\b", re.IGNORECASE)
# A question about earlier work, the only kind the offline model looks up in the previous
# session's transcript: recall words or the past tense ("what was the namespace?", "did we
# pick a port?", "remind me of the plan"), or what/where/which a particular thing is.
EARLIER_WORK = re.compile(
    r"\b(?:earlier|before|previous(?:ly)?|last (?:time|session|week)|remind|again|remember|"
    r"recall|mentioned|we (?:said|decided|picked|chose|agreed|discussed|talked)|"
    r"(?:you|i) (?:said|told|wrote)|(?:did|had|have) (?:we|i|you)|was|were|had)\b|"
    r"^\W*(?:(?:so|and|ok(?:ay)?|hey|now)[,!.]?\s+)*(?:where|which|what|who)(?:'s| is| are) "
    r"(?:the|our|my|that|those|this)\b",
    re.IGNORECASE)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
FOCUS_LEAD = re.compile(
    r"^(?:(?:please|and|also|just)\s+)*(?:(?:keep|focus|focusing|focused|on|remember|"
    r"emphasi[sz]e|prioriti[sz]e|highlight|stress|about|mostly|especially)\s+)+",
    re.IGNORECASE)


def clean_item(text: str, words: int = ITEM_WORDS) -> str:
    """One plain-text line: no newlines, no HTML comments or summary markers, no bold
    markup that could pass for a section heading; at most ``words`` words, each of at most
    WORD_CHARS characters (a blob or a minified line is one long "word"), and ITEM_CHARS
    characters in all."""
    text = text.replace("<!--", " ").replace("-->", " ").replace("**", "")
    text = re.sub(r"SESSION_SUMMARY_(START|END)", r"SESSION SUMMARY \1", text, flags=re.I)
    parts = text.split(maxsplit=words + 8)
    while parts and parts[0] in ("-", "*", "+", "#", "##", "###", ">"):
        parts.pop(0)
    kept = [p if len(p) <= WORD_CHARS else f"{p[:WORD_CHARS]}..." for p in parts[:words]]
    line = " ".join(kept)
    if len(line) > ITEM_CHARS:
        return f"{line[:ITEM_CHARS].rsplit(' ', 1)[0]}..."
    return f"{line}..." if len(parts) > words else line


def is_meta_line(line: str) -> bool:
    """Whether a reply line talks about the conversation (the offline model's phrasings,
    quotes of earlier messages) instead of adding content to it."""
    return bool(_META.search(re.sub(r"^[\s>*_+#-]+", "", line)))


def _is_table_row(line: str) -> bool:
    stripped = line.strip()
    return stripped.startswith("|") or stripped.endswith("|") or stripped.count("|") >= 2


def content_lines(text: str) -> list[str]:
    """The prose lines of ``text``: fenced and indented code, HTML comments, summary
    markers and section headings, table rows and lines that are only markup (rules, bare
    bullets) dropped."""
    text = _INLINE_FENCE.sub(" ", _FENCE.sub(" ", text))
    text = _MARKER.sub(" ", _COMMENT.sub(" ", text))
    kept = (line for line in text.splitlines()
            if not (_MARKUP_ONLY.match(line) or _is_table_row(line) or _CODE_LINE.match(line)
                    or _SUMMARY_HEADING.match(line)))
    return [" ".join(line.split()) for line in kept]


def haystack(text: str) -> str:
    """``text`` with code, comments and markers gone and its spaces collapsed: a pattern that
    matches a sentence of ``prose_sentences(text)`` matches here too, so a search here says
    cheaply whether splitting ``text`` into sentences could find anything."""
    if "```" in text or "~~~" in text:
        text = _INLINE_FENCE.sub(" ", _FENCE.sub(" ", text))
    if "<!--" in text or "SESSION_SUMMARY" in text.upper():
        text = _MARKER.sub(" ", _COMMENT.sub(" ", text))
    # a sentence loses the underscores at its edges ("_we'll use X_"): so does the text
    return " ".join(_EDGE_UNDERSCORE.sub(" ", text).split())


def plain_text(text: str) -> str:
    """``content_lines`` of ``text`` joined by newlines."""
    return "\n".join(content_lines(text))


def is_recall_question(sentence: str) -> bool:
    """Whether ``sentence`` asks about the conversation itself ("what did I just say?",
    "which editor did I mention?", "what crate did we pick?", "Remind me: what ...?")."""
    return bool(_REMIND_ME.match(sentence) or _CHOICE_RECALL.match(sentence)
                or (_RECALL_LEAD.match(sentence) and _RECALL_VERB.search(sentence)))


def is_noise(sentence: str) -> bool:
    """Whether ``sentence`` is no topic: small talk or filler ("ok", "there"), a fragment
    under three words with no exact name and no question mark, a recall question, or
    something with no words at all."""
    words = re.findall(r"[A-Za-z][\w'-]*", sentence)
    fragment = (len(words) < 3 and not NAME.search(sentence)
                and not sentence.rstrip().endswith("?"))
    return not words or fragment or is_small_talk(sentence) or is_recall_question(sentence)


def prose_sentences(text: str, *, reply: bool = False) -> list[str]:
    """The sentences of ``text`` that could be summary items: prose only
    (``content_lines``), no noise (``is_noise``); for a reply, no meta lines."""
    lines = content_lines(text)
    if reply:
        lines = [line for line in lines if not is_meta_line(line)]
    sentences = (s.strip(" \t-*>_") for line in lines for s in _SENTENCE_END.split(line))
    return [s for s in sentences if s and not is_noise(s)]


def is_small_talk(sentence: str) -> bool:
    words = re.findall(r"[a-z']+", sentence.lower())
    return len(words) <= 4 and all(word in _SMALL_TALK for word in words)


def tidy(text: str, words: int = ITEM_WORDS) -> str:
    """A bullet: cleaned, first letter capitalised when the first word is a plain word."""
    item = _FILLER.sub("", clean_item(text, words)).rstrip(" ,;:")
    first = item.split(" ", 1)[0]
    if first.isalpha() and first.islower():
        item = item[0].upper() + item[1:]
    return item


def item_key(item: str) -> frozenset[str]:
    text = item.lower()
    while _LABEL.match(text):
        text = _LABEL.sub("", text, count=1)
    return frozenset(w for w in re.findall(r"[\w./-]*\w", text) if w not in _FOCUS_STOP)


def near_duplicates(a: frozenset[str], b: frozenset[str]) -> bool:
    """Near-duplicates: one item's words contain the other's, or they mostly overlap."""
    if not a or not b:
        return a == b
    size_a, size_b = len(a), len(b)  # (each size taken once: called millions of times)
    if size_a <= size_b:
        if size_a >= 2 and a <= b:
            return True
        if 4 * size_a < 3 * size_b:  # even all of a shared is under 0.75 of the union
            return False
    else:
        if size_b >= 2 and b <= a:
            return True
        if 4 * size_b < 3 * size_a:
            return False
    shared = len(a & b)  # |a | b| is |a| + |b| - shared
    return 4 * shared >= 3 * (size_a + size_b - shared)


def unique(items: Iterable[str], seen: Iterable[str] = ()) -> list[str]:
    """``items`` without empties and near-duplicates (of each other or of ``seen``), found
    through a ``NearIndex`` rather than by comparing every pair."""
    earlier = [item_key(item) for item in seen]
    keyed = [(item, item_key(item)) for item in items]
    index = NearIndex(near_duplicates, [*earlier, *(key for _item, key in keyed)])
    for key in earlier:
        index.add(key)
    out: list[str] = []
    for item, key in keyed:
        if item and key and index.find(key) is None:
            index.add(key)
            out.append(item)
    return out


def topic_phrase(sentence: str) -> str:
    """A concise topic phrase: lead-in words dropped, long sentences cut at a clause or to
    TOPIC_WORDS words, with the exact names (files, numbers, identifiers) of the rest kept."""
    text = _LEAD.sub("", sentence.strip()).rstrip(" .!?;:") or sentence
    aside = re.split(r"[,;]\s+(?=(?:i|we|and|but|so|it|that)\b)", text, flags=re.I)[0]
    text = aside if len(aside.split()) >= 2 else text  # "the logo colours, I like teal"
    words = text.split()
    if len(words) > TOPIC_WORDS:
        clause = re.split(r"[,;]\s|\s(?:because|so that|which|since|but)\s|\s-\s", text)[0]
        if 3 <= len(clause.split()) <= TOPIC_WORDS:
            return tidy(clause)
        rest = " ".join(words[TOPIC_WORDS:])
        names = list(dict.fromkeys(n.rstrip(".,;:!?") for n in NAME.findall(rest)))[:4]
        head = " ".join(words[:TOPIC_WORDS]).rstrip(" ,;:")
        return tidy(f"{head} ({', '.join(names)})" if names else f"{head}...", 40)
    return tidy(text)


def focus_words(focus: str | None) -> set[str]:
    return {w for w in re.findall(r"\w{3,}", (focus or "").lower()) if w not in _FOCUS_STOP}


_SUFFIXES = ("ations", "ation", "ers", "er", "ings", "ing", "ions", "ion", "ed", "es", "s")
STEM_PREFIX = 5  # words sharing their first STEM_PREFIX letters count as the same word


def _stems(word: str) -> set[str]:
    """``word`` and what is left of it without each common English ending it has, when at
    least three letters remain ("users" -> users, user)."""
    return {word} | {word[:-len(end)] for end in _SUFFIXES
                     if word.endswith(end) and len(word) - len(end) >= 3}


def word_forms(word: str) -> set[str]:
    """What ``same_word`` compares, as keys to file a word under: two words are the same word
    exactly when their forms meet ("=" its stems, "<" its first STEM_PREFIX letters)."""
    forms = {f"={stem}" for stem in _stems(word)}
    if len(word) >= STEM_PREFIX:
        forms.add(f"<{word[:STEM_PREFIX]}")
    return forms


def same_word(a: str, b: str) -> bool:
    """Whether two lower-case words are forms of one word: equal, the same once a common
    ending (-er, -ing, -ion, -ed, -s...) is dropped ("lexer", "lexing", "lex"), or sharing
    their first STEM_PREFIX letters ("tokenizer", "tokens")."""
    if a == b or _stems(a) & _stems(b):
        return True
    return len(a) >= STEM_PREFIX and len(b) >= STEM_PREFIX and a[:STEM_PREFIX] == b[:STEM_PREFIX]


def mentions_focus(text: str, words: set[str]) -> bool:
    """Whether ``text`` has a form of one of the focus ``words`` (``same_word``)."""
    found = set(re.findall(r"\w{3,}", text.lower()))
    return bool(words & found) or any(same_word(w, f) for w in words for f in found)


REQUEST_WORDS = frozenset((
    "tell", "explain", "show", "give", "list", "describe", "write", "help", "make", "create",
    "implement", "fix", "add", "find", "summarize", "summarise", "compare", "suggest",
    "recommend", "remind", "can", "could", "would", "will", "please", "how", "what", "why",
    "where", "when", "which", "who", "is", "are", "do", "does", "did", "should", "shall",
))


def asks_about_earlier(text: str) -> bool:
    """Whether ``text`` asks about earlier work (``EARLIER_WORK``), not a statement ("I like
    teal") or a new request ("write the parser")."""
    question = text.rstrip().endswith("?") or bool(_RECALL_LEAD.match(text))
    return question and bool(EARLIER_WORK.search(text))


def is_request(text: str) -> bool:
    """A question or an imperative request, as opposed to a statement to take note of."""
    first = re.match(r"\W*([A-Za-z']+)", text)
    return text.rstrip().endswith("?") or (first is not None
                                           and first.group(1).lower() in REQUEST_WORDS)
