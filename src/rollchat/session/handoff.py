"""Handing the conversation to another agent: ``@NAME message``. What NAME receives of this
session (``handoff.strategy``: a summary, the turns most relevant to the message by FTS5's bm25,
or the last turns verbatim; at most ``handoff.max_tokens``), and the flow that records the
handoff in both sessions. No terminal I/O: the chat app picks the sessions and draws the events.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Generator, Sequence
from typing import TYPE_CHECKING

from rollchat.domain import QUERY_KINDS, Summary, Turn, plain_turn
from rollchat.events import Event, Notice, SummaryFinished, SummaryStarted
from rollchat.session.handed import CONTEXT_TAG, Handed
from rollchat.session.state import UNSAVED, now
from rollchat.text.normalize import clean
from rollchat.text.wording import plural

__all__ = ["CONTEXT_TAG", "Handed", "hand_off", "handed_context", "latest_in_chain"]

if TYPE_CHECKING:
    from rollchat.config.settings import AgentConfig, HandoffConfig
    from rollchat.session.core import Session
    from rollchat.session.state import SessionState
    from rollchat.storage.listing import SessionInfo
    from rollchat.storage.store import Store

_WORD = re.compile(r"\w+")
_MAX_TERMS = 64  # query words given to bm25 (a pasted essay does not make a huge query)
# Words left out of the query: with them every turn would match (bm25 orders the turns that
# match; which turns match is decided by the words that say something).
_COMMON_WORDS = """
a about above after again all also am an and any are as at be because been before being
below between both but by can could did do does doing done down during each few for from
further had has have having he her here hers him his how i if in into is it its itself just
let lets me more most my no nor not now of off on once only or other our ours out over own
please same she should so some such than that the their theirs them then there these they
this those through to too under until up us very was we were what when where which while
who whom why will with would you your yours yourself
"""
_STOPWORDS = frozenset(_COMMON_WORDS.split())
TRIMMED = " […cut to fit handoff.max_tokens]"

Count = Callable[[str], int]


# ------------------------------------------------------------------ choosing the context


def summary_text(summary: Summary) -> str:
    """A summary as plain text for another agent (no file markers)."""
    parts = [f"Background: {summary.background}"]
    for title, items in (("Topics discussed", summary.topics),
                         ("Decisions made", summary.decisions), ("Pending", summary.pending),
                         ("Timeline", summary.timeline),
                         ("Files and artifacts", summary.artifacts)):
        if items:
            parts.append(f"{title}:\n" + "\n".join(f"- {item}" for item in items))
    return "\n\n".join(parts)


def turn_text(turn: Turn, agent: str) -> str:
    """One turn verbatim (the text of its tool calls left out: their results can be huge)."""
    return plain_turn(turn, f"[{turn.title}]", you="User", agent=agent, full=False)


def trim(text: str, limit: int, count: Count) -> str:
    """``text`` cut (at the end) to at most ``limit`` tokens, saying so."""
    size = count(text)
    while size > limit and text:
        keep = max(int(len(text) * limit / size * 0.9) - len(TRIMMED), 0)
        text = text[:keep].rstrip() + TRIMMED if keep else ""
        size = count(text)
    return text


def last_turns(texts: Sequence[str], n: int, limit: int, count: Count) -> list[int]:
    """The indexes of the last ``n`` texts that fit ``limit`` tokens together (the newest
    always, cut to fit if it must be)."""
    chosen: list[int] = []
    used = 0
    for i in range(len(texts) - 1, max(len(texts) - n, 0) - 1, -1):
        size = count(texts[i])
        if used + size > limit and chosen:
            break
        chosen.append(i)
        used += size
    return sorted(chosen)


def relevant_turns(texts: Sequence[str], query: str, limit: int, count: Count) -> list[int]:
    """The indexes of the texts that share a word with ``query`` (common words aside), the
    most relevant first by SQLite FTS5's bm25 (an in-memory database) while they fit ``limit``
    tokens together, returned in their original order; empty when none matches."""
    import sqlite3

    terms = list(dict.fromkeys(w for w in (w.lower() for w in _WORD.findall(clean(query)))
                               if w not in _STOPWORDS))[:_MAX_TERMS]
    if not terms or not texts:
        return []
    db = sqlite3.connect(":memory:")
    try:
        db.execute("CREATE VIRTUAL TABLE turns USING fts5(body)")
        db.executemany("INSERT INTO turns(rowid, body) VALUES (?, ?)",  # (valid Unicode)
                       ((i, clean(text)) for i, text in enumerate(texts)))
        match = " OR ".join(f'"{t}"' for t in terms)  # \w+ words: no quote inside
        ranked = [row[0] for row in db.execute(
            "SELECT rowid FROM turns WHERE turns MATCH ? ORDER BY bm25(turns)", (match,))]
    finally:
        db.close()
    chosen: list[int] = []
    used = 0
    for i in ranked:
        size = count(texts[i])
        if used + size <= limit or not chosen:
            chosen.append(i)
            used += size
    return sorted(chosen)


def handed_context(session: Session, message: str) -> Generator[Event, None, Handed]:
    """What ``session`` hands over with ``message``, by its config's ``handoff.strategy``."""
    cfg: HandoffConfig = session.config.handoff
    state, count = session.state, session.counter.count_text
    turns = [t for t in state.turns if t.kind in QUERY_KINDS]
    agent, sid = session.agent.name, state.session_id

    def handed(body: str, what: str, strategy: str = cfg.strategy) -> Handed:
        body = trim(body, cfg.max_tokens, count)
        return Handed(agent, sid or UNSAVED, strategy, body, what, count(body) if body else 0)

    if not turns:
        if state.parent_summary is None:
            return handed("", "nothing yet (the session has no queries)")
        return handed(summary_text(state.parent_summary), "the summary it was resumed from",
                      "summary")
    if cfg.strategy == "summary":
        yield SummaryStarted()
        try:
            outcome = session.summarizer.summarize(turns, state.parent_summary, message or None)
        except KeyboardInterrupt:
            outcome = session.summarizer.interrupted(turns, state.parent_summary, message or None)
        yield SummaryFinished(outcome.summary, outcome.reason if outcome.fallback_used else None)
        if outcome.fallback_used:
            yield Notice("warning", f"The model's summary failed ({outcome.reason}); a local "
                                    "extractive summary is handed over instead.")
        return handed(summary_text(outcome.summary), "a summary of the conversation")
    texts = [turn_text(t, agent) for t in turns]
    if cfg.strategy == "bm25":
        chosen = relevant_turns(texts, message, cfg.max_tokens, count)
        what = f"the {plural(len(chosen), 'turn')} most relevant to the message"
        if not chosen:  # no word in common: the latest turns say most about where it stands
            chosen = last_turns(texts, cfg.last_n, cfg.max_tokens, count)
            what = (f"the last {plural(len(chosen), 'turn')} (none shares a word with the "
                    "message)")
    else:
        chosen = last_turns(texts, cfg.last_n, cfg.max_tokens, count)
        what = f"the last {plural(len(chosen), 'turn')} verbatim"
    return handed("\n\n".join(texts[i] for i in chosen), what)


# ------------------------------------------------------------------ the flow


def hand_off(source: Session, target: Session, message: str,
             previous: SessionInfo | None = None) -> Generator[Event, None, None]:
    """Hand the conversation from ``source`` to ``target`` with ``message``: the context
    chosen, ``target`` continuing ``previous`` (its latest session in this chain, from disk)
    when given, its file made (``Handed From`` the source), the handoff recorded in the
    source's transcript, then ``message`` sent to ``target`` with the context block."""
    message = clean(message)
    target.engine.gate.new_session()  # what was approved "always" before is asked again
    handed = yield from handed_context(source, message)
    if previous is not None:
        yield Notice("info", f"Continuing {target.agent.name}'s session {previous.session_id} "
                             "of this conversation.")
        yield from target.resume(previous.session_id, as_chosen=True)  # (chosen above)
    target.handed_over_from(source.state.session_id)
    target_id = yield from target.ensure_file()
    if source.state.live is not None:
        yield from source.record_entry(Turn(
            "handoff", 0, now(), message, (),
            context=f"Handed to {target.agent.name} ({target_id or UNSAVED}) with "
                    f"{handed.what}"))
    yield Notice("info", f"Handing over to {target.agent.name} with {handed.what}"
                         f"{f' ({handed.tokens:,} tokens)' if handed.tokens else ''}.")
    yield from target.turn(message, handed)


def chain_ids(listing: Sequence[SessionInfo], state: SessionState) -> set[str]:
    """The sessions of the conversation ``state`` belongs to: itself and its ancestors
    (``Resumed From``), and the sessions that handed any of them over (``Handed From``)."""
    by_id = {info.session_id: info for info in listing}
    found: set[str] = set()
    todo = [sid for sid in (state.session_id, state.resumed_from, state.handed_from) if sid]
    while todo:
        sid = todo.pop()
        if sid in found:
            continue
        found.add(sid)
        info = by_id.get(sid)
        if info is not None:
            todo += [s for s in (info.resumed_from, info.handed_from) if s]
    return found


def latest_in_chain(store: Store, state: SessionState,
                    agent: AgentConfig) -> SessionInfo | None:
    """``agent``'s latest session in the conversation ``state`` belongs to (one of the chain,
    or handed over from one of it, then followed along ``Continued In``), or None."""
    if not (state.session_id or state.resumed_from or state.handed_from):
        return None
    sessions = store.list_sessions(exclude=state.session_id).sessions
    chain = chain_ids(sessions, state)
    mine = [i for i in sessions if i.agent_path == agent.agent_path and i.agent == agent.name
            and (i.session_id in chain or i.handed_from in chain)]
    if not mine:
        return None
    by_id = {info.session_id: info for info in sessions}
    best = max(mine, key=lambda i: (i.date, i.session_id))
    seen = {best.session_id}
    while True:
        later = [by_id[c] for c in best.continued_in if c in by_id and c not in seen
                 and by_id[c].agent_path == agent.agent_path]
        if not later:
            return best
        best = max(later, key=lambda i: (i.date, i.session_id))
        seen.add(best.session_id)
