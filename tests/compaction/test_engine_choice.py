"""compaction.engine: the provider's compaction only where the provider has one."""

from __future__ import annotations

from collections.abc import Iterator

from rollchat.compaction.engine import choose_engine
from rollchat.domain import ProviderBlock, Usage
from rollchat.providers.base import ChatRequest, Done, StreamEvent
from rollchat.providers.compacting import Compacted


class Plain:
    name = "openai"

    def stream(self, request: ChatRequest) -> Iterator[StreamEvent]:
        yield Done()


class Server(Plain):
    name = "anthropic"

    def compact(self, request: ChatRequest, instructions: str) -> Compacted:
        return Compacted("s", ProviderBlock("anthropic", "compaction", "{}"), Usage())


def test_rollchat_is_rollchat_whatever_the_provider() -> None:
    assert choose_engine("rollchat", Server()).engine == "rollchat"
    assert choose_engine("rollchat", Server()).note is None


def test_provider_where_the_provider_compacts() -> None:
    choice = choose_engine("provider", Server())
    assert choice.engine == "provider" and choice.note is None


def test_provider_without_server_compaction_falls_back_and_says_why() -> None:
    choice = choose_engine("provider", Plain())
    assert choice.engine == "rollchat"
    assert choice.note is not None and "openai provider has no server-side compaction" in \
        choice.note


def test_no_background_summary_when_the_provider_compacts() -> None:
    """A summary ahead of the threshold sends every turn again, uncached, and the compaction
    then used it instead of the provider's (the user's compaction.engine: provider was never
    asked in a chat that grew past 70% of the budget turn by turn)."""
    from datetime import datetime, timezone

    from rollchat.compaction.policy import compute_budget
    from rollchat.compaction.summarizer import Background, Summarizer
    from rollchat.config.settings import SummaryConfig
    from rollchat.domain import Text, Turn
    from rollchat.models.tokens import TokenCounter

    turns = [Turn("query", n, datetime(2026, 12, 7, tzinfo=timezone.utc), f"question {n}",
                  (Text(f"answer {n}"),)) for n in (1, 2, 3)]
    started = {}
    for name, provider in (("plain", Plain()), ("server", Server())):
        summarizer = Summarizer(provider, model="m", config=SummaryConfig(),
                                budget=compute_budget(100_000, 4096, 0.8, 1000),
                                counter=TokenCounter("m"), engine="provider")
        background = Background()
        summarizer.start_background(background, turns, None)
        started[name] = len(background.runs)
    assert started == {"plain": 1, "server": 0}
