"""What the user is told once a summary is written: a smaller window it taught, the lines about
the compaction engine, the local fallback, and what the summary cost, cache reads apart."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Protocol

from rollchat.compaction.call import NOT_ASKED, SummaryOutcome, fallback_line
from rollchat.domain import Usage
from rollchat.events import Notice
from rollchat.models.prices import money


class Learned(Protocol):
    def line(self, what: str) -> str: ...


def summary_notices(outcome: SummaryOutcome, learned: Iterable[Learned],
                    engine_notes: Iterable[str], dollars: float | None) -> Iterator[Notice]:
    """The lines after a summary: each window learned, each engine line (said once), the
    fallback to the local summary, and the summary's cost (``dollars``: its call's record,
    priced with the model that wrote it) when a model call was billed."""
    for window in learned:
        yield Notice("warning", window.line("the summary was written in smaller parts"))
    for note in engine_notes:
        yield Notice("warning", note)
    if outcome.fallback_used:  # chosen (the model not asked: said why) is no warning
        chosen = outcome.reason is not None and outcome.reason.startswith(NOT_ASKED)
        yield Notice("info" if chosen else "warning", fallback_line(outcome.reason))
    if outcome.usage.total:
        yield Notice("info", summary_cost_line(outcome.usage, dollars))


def summary_cost_line(usage: Usage, dollars: float | None) -> str:
    """``Summary: 152,340 input tokens (148,020 cache reads, 2,100 written), 612 output:
    $0.0712.`` The cost is left out when the model's price is unknown (``dollars`` None)."""
    parts = [f"{usage.cache_read_tokens:,} cache reads"]
    if usage.cache_write_tokens:
        parts.append(f"{usage.cache_write_tokens:,} written")
    line = (f"Summary: {usage.input_tokens:,} input tokens ({', '.join(parts)}), "
            f"{usage.output_tokens:,} output")
    return f"{line}: {money(dollars)}." if dollars is not None else f"{line}."
