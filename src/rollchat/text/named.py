"""Named items found inside sentences: preferences, finished work, numbers with their units, file
paths, URLs, commands, identifiers, names of people and systems. Used by the extractive
summarizer, carrying open tasks and the summary audit; text.phrases classifies whole sentences."""

from __future__ import annotations

import re
from functools import lru_cache

# "I'd rather keep the API in Go", "I like teal", "please always answer in French"
# An adverb may stand between the person and the verb, as people write: "I actually want to
# commit .claude-transcripts", "I don't currently have linting setup", "i'll just create a
# script" (real prompts, tests/text/data/phrasings.json).
ADVERB = (r"(?:(?:actually|really|just|still|also|probably|definitely|currently|honestly|"
          r"personally|generally|usually|now|then)\s+)?")
PREFERENCE = re.compile(
    rf"\b(?:i(?:'d|’d| would) {ADVERB}(?:rather|prefer)|i {ADVERB}prefer|"
    r"we(?:'d| would)? prefer|prefer(?:ably)? |"
    r"i (?:really )?(?:like|love|hate|dislike)\b(?! (?:you|to know|to ask)\b)|"
    rf"i (?:don't|don’t|do not) {ADVERB}(?:like|want)|my preference|i'm not a fan|not a fan of|"
    r"(?:please )?(?:always|never) (?:use|answer|write|reply|put|call|add)|"
    r"keep (?:it|them|things|the (?:\w+ ){0,3}?\w+) (?:short|simple|small|in|as|under|below)|"
    r"i want (?:it|them|the \w+) (?:to be|in|as|kept))",
    re.IGNORECASE)
# Decisions in natural phrasing that phrases.DECISION does not cover.
DECISION_MORE = re.compile(
    r"\b(?:(?:we|i) (?:picked|pick|chose|choose|selected|went for|go for)|picked|"
    r"let's do|we(?:'re| are) doing|landed on|the plan is|it's settled|that's settled|"
    r"sticking with|going forward|from now on|in the end we|final call|it is then|"
    r"(?<!what )(?<!how )(?<!where )(?<!who )it is(?=[,.!;]|\s+then\b|$)|"
    r"(?:we|i)(?:'ll| will) (?:use|keep|run|ship|release|deploy|move|host|store|call))\b",
    re.IGNORECASE)
# A later sentence saying an open task is finished ("the billing migration is done").
DONE = re.compile(
    r"\b(?:done|finished|completed?|shipped|merged|resolved|fixed|deployed|migrated|landed|"
    r"closed|sorted out|taken care of|wrapped up|no longer needed|not needed anymore|"
    r"cancell?ed|upgraded|released|works now|is live|went live)\b",
    re.IGNORECASE)
NOT_DONE = re.compile(r"\b(?:not|never|yet|still|almost|nearly|once|until|unless|if|"
                      r"when|after|before|should|must|need|needs|will)\b|n't\b",
                      re.IGNORECASE)
UNITS = (r"%|ms|milliseconds?|s|secs?|seconds?|mins?|minutes?|h|hrs?|hours?|days?|weeks?|"
         r"months?|years?|[kmgtp]i?b|bytes?|rps|qps|req/s|requests?(?: (?:per|a|an) \w+)?|"
         r"users?|tokens?|cores?|cpus?|nodes?|replicas?|workers?|threads?|retries|rows?|"
         r"lines?|px|pixels?|dpi|ghz|mhz|mbps|gbps|°[cf]|degrees?|eur|usd|euros?|dollars?|"
         r"k|m|x|times|instances?|shards?|partitions?|connections?|items?|steps?|pages?")
# "30 seconds", "512 MB", "$400", "port 8443", "postgres 16", "v2.3.1", "99.9%"
NUMBER = re.compile(
    rf"(?:[$€£]\s?\d[\d,]*(?:\.\d+)?(?:\s?[kKmM]\b)?|"
    rf"(?i:\b(?:port|version|v|release|timeout|ttl|limit|budget|quota)\s?\d[\w.]*)|"
    rf"(?i:\b\d[\d,]*(?:\.\d+)?\s?(?:{UNITS})(?![\w]))|"
    rf"\b[A-Z][a-zA-Z]+ \d+(?:\.\d+)*\b)")
URL = re.compile(r"\bhttps?://[^\s<>\"')\]]+[^\s<>\"')\].,;:!?]")
_EXT = (r"py|js|mjs|ts|tsx|jsx|go|rs|java|kt|rb|php|c|h|cc|cpp|hpp|cs|swift|md|rst|txt|yml|"
        r"yaml|json|toml|ini|cfg|conf|sql|sh|bash|zsh|ps1|csv|tsv|html|css|scss|lock|env|tf|"
        r"proto|xml|gradle|dockerfile|ipynb|log|pdf|png|jpg|svg|zip|tar|gz|parquet")
PATH = re.compile(
    rf"(?<![\w/@.-])(?:~|\.{{1,2}})?/?(?:[\w.-]+/)+[\w.-]*\w/?(?![\w/])|"
    rf"(?<![\w/.-])[\w-]+(?:\.[\w-]+)*\.(?:{_EXT})\b(?![./]\w)|"
    rf"(?<![\w/.-])(?:Dockerfile|Makefile|Justfile|Procfile|Jenkinsfile)\b")
COMMAND = re.compile(r"`([^`\n]{2,80})`")
# ticket and pull-request ids, snake_case and CamelCase identifiers
IDENTIFIER = re.compile(r"\b[A-Z][A-Z0-9]+-\d+\b|#\d{2,}\b|\b[a-z]+(?:_[a-z0-9]+)+\b|"
                        r"\b[a-z]+[A-Z][A-Za-z0-9]+\b|\b[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]+)+\b")
_NOT_PATHS = frozenset(("and/or", "n/a", "req/s", "w/o", "i/o", "km/h", "either/or", "tcp/ip",
                        "24/7", "read/write", "on/off", "yes/no", "true/false"))


def _word_set(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Capitalised words that are ordinary English, never a name of a person or a system.
COMMON_CAPITALISED = _word_set("""
i i'm i'd i'll i've a an the we we'll we're we've let's lets let ok okay so also and but or
if then this that these those it it's its my our your you he she they there here what when
where which who why how can could would should will shall may might must do does did is are
was were be been have has had no yes not please thanks thank hi hello hey sure great good
nice cool right well now just maybe perhaps actually also btw fyi note noted monday tuesday
wednesday thursday friday saturday sunday january february march april may june july august
september october november december today tomorrow yesterday one two three first second
next last after before once all any some every each both either neither none another other
in on at by for from to of with about as into onto over under up down out off via per
api apis url urls ui cli db sql http https json yaml ci cd pr id ids todo fixme tbd asap eta
faq tl;dr readme changelog license ttl kb mb gb tb ms rps qps cpu gpu ram
""")
_CAPITALISED = re.compile(r"\b[A-Z][\w'’-]*[\w]")
# A capitalised first word followed by one of these verbs (a second capitalised word may come
# between: a full name) is a name: "Priya owns the load test" (issue 24), "Biome has exactly
# what we need" (a Claude Code session), "Ratty is getting rather tired of always doing the
# meeting notes" (SeaMonkey meeting notes); sources in tests/text/data/phrasings.json.
_SUBJECT_VERB = re.compile(
    r"\s+(?:[A-Z][\w'’-]*\s+)?(?:is|was|has|had|owns|owned|runs|ran|leads|led|handles|"
    r"maintains|manages|said|says|sent|wrote|created|built|added|fixed|found|reviewed|"
    r"approved|suggested|mentioned|asked|agreed|thinks|thought|wants|wanted|needs|prefers|"
    r"knows|will|would|can|could|should|must|may|might|does|did)\b")
_NOUN_ENDINGS = ("ing", "tion", "sion", "ment", "ness", "ity", "ance", "ence", "ency", "ism",
                 "ure", "age", "ics", "ly", "ship")
_NOT_NAMES = _word_set("""
nothing everything something anything someone everyone anyone nobody everybody somebody most
many few several such only even still yet much more less another whoever whatever
""")
# words that say nothing about which task or item is meant
_FILLER_WORDS = _word_set("""
the and for with that this from into then than them they their there have has had was were
will would should could can need needs still pending todo later soon next step steps also
just some any all our your you its it's about what when where which who why how not yet
done finished complete completed let's lets we'll we're make sure still please thing things
""")


def content_words(text: str) -> list[str]:
    """The words of ``text`` that say what it is about (lower case, in order, no filler)."""
    words = re.findall(r"[a-z0-9][a-z0-9._/-]*[a-z0-9]|\d", text.lower())
    return list(dict.fromkeys(w for w in words if w not in _FILLER_WORDS
                              and (len(w) >= 3 or w.isdigit())))


CACHED_CHARS = 2_000  # texts up to this long are cached (4,096 of them: a few MB at most)
# what every path or URL holds besides a "/" (read first: most sentences have none)
_MAY_BE_PATH = re.compile(
    rf"\.(?:{_EXT})\b|(?:Dockerfile|Makefile|Justfile|Procfile|Jenkinsfile)\b")


def paths(text: str) -> list[str]:
    """File paths and URLs in ``text``, in order."""
    if "/" not in text and _MAY_BE_PATH.search(text) is None:
        return []
    return list(_paths(text) if len(text) <= CACHED_CHARS else _paths.__wrapped__(text))


@lru_cache(maxsize=4096)  # a sentence is read for names, numbers and artifacts in turn
def _paths(text: str) -> tuple[str, ...]:
    found = [m.rstrip(".,;:") for m in URL.findall(text)]
    rest = URL.sub(" ", text)
    for match in PATH.finditer(rest):
        item = match.group(0).rstrip(".,;:")
        if item.lower() not in _NOT_PATHS and not item.replace("/", "").isdigit() \
                and re.search(r"[A-Za-z]", item):
            found.append(item)
    return tuple(dict.fromkeys(found))


def numbers(text: str) -> list[str]:
    """Numbers with their units ("30 seconds", "port 8443", "$400"), in order."""
    found = (" ".join(m.group(0).split()).rstrip(".,") for m in NUMBER.finditer(text))
    return list(dict.fromkeys(n for n in found if re.search(r"\d", n)))


def artifacts(text: str) -> list[str]:
    """Paths, URLs, commands in backticks and identifiers in ``text``, in order."""
    return list(_artifacts(text) if len(text) <= CACHED_CHARS
                else _artifacts.__wrapped__(text))


@lru_cache(maxsize=4096)  # names() asks again for each capitalised word of a sentence
def _artifacts(text: str) -> tuple[str, ...]:
    found = paths(text) + [c.strip() for c in COMMAND.findall(text)]
    found += [i for i in IDENTIFIER.findall(COMMAND.sub(" ", text))
              if not any(i in f for f in found)]
    return tuple(dict.fromkeys(found))


def names(sentence: str, known: frozenset[str] = frozenset()) -> list[str]:
    """Names of people and systems in ``sentence``: capitalised words that are not ordinary
    English; the first word of a sentence only when it is in ``known`` (lower case: names
    seen elsewhere in the middle of a sentence)."""
    found: list[str] = []
    for match in _CAPITALISED.finditer(sentence):
        word = match.group(0).rstrip("'’s") if match.group(0).endswith(("'s", "’s")) \
            else match.group(0)
        lower = word.lower()
        if lower in COMMON_CAPITALISED or len(word) < 2 or word.isdigit() or any(
                word in a for a in artifacts(sentence)):
            continue
        first = not sentence[:match.start()].strip(" \t\"'(-*>_")
        if first and lower not in known and not _leads_as_name(sentence, match, lower):
            continue
        found.append(word)
    return list(dict.fromkeys(found))


def _leads_as_name(sentence: str, match: re.Match[str], lower: str) -> bool:
    """Whether the capitalised first word ``match`` of ``sentence`` is a name: possessive,
    or followed by a verb that has a person or a system for its subject, and not a plain
    noun by its ending ("Deployment is slow") nor a pronoun ("Nothing is done")."""
    if lower.endswith(_NOUN_ENDINGS) or lower in _NOT_NAMES:
        return False
    return match.group(0).endswith(("'s", "’s")) or bool(
        _SUBJECT_VERB.match(sentence, match.end()))


def mid_sentence_names(sentences: list[str]) -> frozenset[str]:
    """The lower-case names that appear capitalised in the middle of one of ``sentences``."""
    return frozenset(n.lower() for s in sentences for n in names(s))


# A name the sentence only addresses (a vocative) says nothing about what it is about: after
# the interjection that opens it ("Thanks Ana, that works", "Hey, Bo!") or set off by a comma
# before its end or another comma ("That works, Ana.", "Wow, Bo, well done").
_INTERJECTION = (r"(?i:hey|hi|hello|hiya|thanks|thank you|thx|wow|whoa|yeah|yes|yep|oh|ah|"
                 r"aw+|ok|okay|sure|great|cool|nice|congrats|congratulations|sorry|dear|haha|"
                 r"lol|well|good morning|morning|evening|bye|goodbye|cheers)")
_VOCATIVE = re.compile(rf"^\W*{_INTERJECTION}\b[\s,!.]*(?P<lead>[A-Z][\w'’-]*)(?![\w'’-])|"
                       r",\s*(?P<tail>[A-Z][\w'’-]*)\s*(?:[.!?,;:)]|$)")


def addressed(sentence: str) -> frozenset[str]:
    """The names ``sentence`` only addresses (see _VOCATIVE)."""
    return frozenset(m["lead"] or m["tail"] for m in _VOCATIVE.finditer(sentence))


def has_named(text: str) -> bool:
    """Whether ``text`` holds a name (not only one it addresses: "Thanks, Ana"), a number with
    its unit, a path or an identifier."""
    if numbers(text) or artifacts(text):
        return True
    found = names(text)
    return bool(found) and bool(set(found) - addressed(text))
