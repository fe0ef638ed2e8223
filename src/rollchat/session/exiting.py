"""What the exit's summary costs: ``summary.on_exit`` (auto, model, local, skip) and, for auto,
whether the session had real content (worth a model's summary) or was trivial (the local one);
and the figures the chat ends with (``ended``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from rollchat.domain import ToolUse, Turn
from rollchat.events import Ended
from rollchat.models.calls import Call, cost_of, usage_of
from rollchat.session.state import SessionState

ExitSummary = Literal["model", "local", "skip"]
# auto: a fresh session (not a resume, compaction or handoff) whose conversation, the user's
# messages and the answers together, holds fewer words than this, with no tool call and no
# attached image, is trivial ("hi", "thanks"): its summary is written locally, without a model
# call. docs/configuration.md states the threshold.
TRIVIAL_WORDS = 60
SKIPPED = ("No summary written (summary.on_exit: skip): every turn is saved, and resuming the "
           "session summarizes it then.")


def trivial(turns: Sequence[Turn], *, continued: bool) -> bool:
    """Whether a session of ``turns`` is too small for a model's summary (see TRIVIAL_WORDS);
    a session that ``continued`` another never is: its summary carries the earlier one's."""
    if continued or any(t.kind != "query" for t in turns):
        return False
    if any(t.attached or any(isinstance(b, ToolUse) for b in t.blocks) for t in turns):
        return False
    return sum(len(t.user.split()) + len(t.assistant.split()) for t in turns) < TRIVIAL_WORDS


def exit_summary(on_exit: str, turns: Sequence[Turn], *, continued: bool) -> ExitSummary:
    """How the exit summarizes: ``on_exit`` itself, or for ``auto`` the model unless the
    session is trivial."""
    if on_exit in ("model", "local", "skip"):
        return on_exit  # type: ignore[return-value]
    return "local" if trivial(turns, continued=continued) else "model"


def ended(state: SessionState, spent: float | None, run: Sequence[Call], *, priced: bool,
          in_memory: bool, unpriced_model: str | None = None) -> Ended:
    """The goodbye's figures: the session's (``spent``: its cost), its chain's, and the whole
    run's (``run``: every model call the chat made, in every session it went on in)."""
    chain = state.chain.plus(spent)
    return Ended(state.session_id, state.queries, state.tokens, state.restoration_tokens,
                 state.summary_tokens, state.save_failed, state.restored is not None,
                 state.summary_failed, cost=spent,
                 chain_cost=chain.spent if chain.known else None,
                 chain_sessions=chain.sessions, chain_unpriced=chain.unpriced,
                 in_memory=in_memory, run_usage=usage_of(run), run_cost=cost_of(run, priced),
                 memory_tokens=state.memory_tokens, unpriced_model=unpriced_model)
