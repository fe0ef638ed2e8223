"""What a summary kept: the named items of a session's own transcript (decisions, open tasks,
preferences, names, numbers with their units, paths) and whether the summary holds each in the
section of its kind. ``rollchat audit`` prints it; ``compact`` shows one line of it."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from rollchat.compaction.carry import Resolutions, resolves
from rollchat.compaction.extractive import decided
from rollchat.domain import Summary, Turn
from rollchat.text import named
from rollchat.text.phrases import TODO, prose_sentences, same_word, tidy, unique

KINDS = ("decision", "pending", "preference", "name", "number", "path")
MUST_KEEP = ("decision", "pending")  # losing one of these fails the audit (exit status 1)


@dataclass(frozen=True)
class Item:
    text: str
    kind: str


@dataclass(frozen=True)
class Audit:
    kept: tuple[Item, ...]
    lost: tuple[Item, ...]
    dropped_topics: int = 0  # left out of the summary to fit its budget (the block says so)
    dropped_artifacts: int = 0

    @property
    def failed(self) -> bool:
        return any(item.kind in MUST_KEEP for item in self.lost)


def find_items(turns: Sequence[Turn], parent: Summary | None = None) -> list[Item]:
    """The named items of ``turns`` (the restoration entry excluded), and the parent's open
    tasks that no turn resolved."""
    turns = [t for t in turns if t.kind in ("query", "carried")]
    said = [(i, s, who) for i, t in enumerate(turns)
            for who, text in (("user", t.user), ("assistant", t.assistant))
            for s in prose_sentences(text, reply=who == "assistant")]
    known = named.mid_sentence_names([s for _, s, _ in said])
    done = Resolutions(turns)  # filed once: asking each to-do of every later turn was quadratic
    found: dict[str, list[str]] = {kind: [] for kind in KINDS}
    for index, sentence, who in said:
        if decided(sentence):
            found["decision"].append(tidy(sentence))
        elif who == "user" and named.PREFERENCE.search(sentence) and not sentence.endswith("?"):
            found["preference"].append(tidy(sentence))
        if (TODO.search(sentence) and not named.DONE.search(sentence)
                and not done.resolved(sentence, after=index)):
            found["pending"].append(tidy(sentence))
        found["name"] += named.names(sentence, known)
        found["number"] += named.numbers(sentence)
        found["path"] += named.paths(sentence)
    for turn in turns:
        for tool in turn.tools:
            found["path"] += named.paths(" ".join(str(v) for v in tool.call.arguments.values()))
    if parent is not None:
        found["pending"] += [p for p in parent.pending if not done.resolved(p)]
    items: list[Item] = []
    for kind in KINDS:
        texts = (unique(found[kind]) if kind in ("decision", "pending", "preference")
                 else list(dict.fromkeys(found[kind])))
        items += [Item(text, kind) for text in texts]
    return items


def _words(text: str) -> list[str]:
    return named.content_words(text)


def _holds(bullets: Sequence[str], item: str) -> bool:
    """Whether a bullet says what ``item`` says: at least half of its key words (two at
    least) and every number in it."""
    keys = _words(item)
    digits = re.findall(r"\d+", item)
    for bullet in bullets:
        words = _words(bullet)
        shared = sum(1 for k in keys if any(same_word(k, w) for w in words))
        if shared >= min(2, len(keys)) and shared * 2 >= len(keys) and all(
                re.search(rf"(?<!\d){d}(?!\d)", bullet) for d in digits):
            return True
    return False


def kept(item: Item, summary: Summary) -> bool:
    """Whether ``summary`` keeps ``item`` in the section of its kind: a decision under
    Decisions, an open task under Pending, a preference under either; a name, a number or a
    path anywhere in it (a mention among the topics counts only for those)."""
    if item.kind == "decision":
        return _holds(summary.decisions, item.text)
    if item.kind == "pending":
        return _holds(summary.pending, item.text) or any(
            resolves(line, item.text) for line in (*summary.decisions, summary.background))
    if item.kind == "preference":
        return _holds((*summary.decisions, *summary.pending), item.text)
    text = "\n".join((summary.background, *summary.topics, *summary.decisions,
                      *summary.pending, *summary.artifacts))
    if item.kind == "number":
        return all(re.search(rf"(?<!\d){d}(?!\d)", text) for d in re.findall(r"\d+", item.text))
    pattern = rf"(?<![\w/.-]){re.escape(item.text)}(?![\w/-])"
    return re.search(pattern, text, 0 if item.kind == "path" else re.IGNORECASE) is not None


def audit(turns: Sequence[Turn], summary: Summary, parent: Summary | None = None) -> Audit:
    items = find_items(turns, parent)
    return Audit(tuple(i for i in items if kept(i, summary)),
                 tuple(i for i in items if not kept(i, summary)),
                 summary.dropped_topics, summary.dropped_artifacts)


def audit_line(result: Audit, limit: int = 4) -> str:
    """One line for the chat: "The summary keeps 14 of 15 named items (lost: port 8443)"."""
    total = len(result.kept) + len(result.lost)
    if not (total or result.dropped_topics or result.dropped_artifacts):  # not "0 of 0"
        return ("The session named no decisions, open tasks, files or figures for the summary "
                "to keep.")
    line = f"The summary keeps {len(result.kept)} of {total} named items"
    if result.dropped_topics or result.dropped_artifacts:
        line += (f" ({result.dropped_topics} topics and {result.dropped_artifacts} artifacts "
                 "left out to fit its budget)")
    if not result.lost:
        return line + "."
    lost = sorted(result.lost, key=lambda i: i.kind not in MUST_KEEP)
    shown = "; ".join(f"{i.kind} {_short(i.text)}" if i.kind in MUST_KEEP else _short(i.text)
                      for i in lost[:limit])
    more = f"; {len(lost) - limit} more" if len(lost) > limit else ""
    return f"{line} (lost: {shown}{more}); `compact <focus>` can keep them."


def _short(text: str, words: int = 8) -> str:
    parts = text.split()
    return " ".join(parts[:words]) + ("..." if len(parts) > words else "")


def audit_session(store: object, ref: str) -> Audit:
    """The audit of saved session ``ref`` (a number of ``rollchat sessions``, an id or a
    unique id prefix) against its own transcript and its parent's open tasks. Raises
    RollchatError (a session without a summary, an unknown reference)."""
    from rollchat.errors import StoreError
    from rollchat.storage.listing import resolve
    from rollchat.storage.store import SessionStore

    assert isinstance(store, SessionStore)
    info = resolve(ref, store.list_sessions())
    transcript = store.load_transcript(info.session_id)
    if transcript.summary is None:
        raise StoreError(f"{info.file_name} has no summary to audit (it was never compacted "
                         "or ended normally)")
    parent = None
    if transcript.header.resumed_from:
        try:
            parent = store.load_transcript(transcript.header.resumed_from).summary
        except Exception:  # a missing or unreadable parent: audit this session's own turns
            parent = None
    return audit(transcript.turns, transcript.summary, parent)


def report(result: Audit) -> list[str]:
    """The audit as lines: the kept and the lost items by kind, then the one-line verdict."""
    lines: list[str] = []
    for title, items in (("Lost", result.lost), ("Kept", result.kept)):
        lines.append(f"{title} ({len(items)}):")
        lines += [f"  {item.kind:<10} {item.text}" for item in items] or ["  (none)"]
    lines.append(audit_line(result))
    return lines
