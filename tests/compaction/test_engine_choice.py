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
