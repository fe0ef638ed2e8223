"""The provider's compaction without waste, through the real anthropic SDK against the local
compaction server (tests/wire_anthropic_compaction.py): a transient compaction error
(compaction_unavailable, 529) is retried as any request is; a server summary without
rollchat's markers is kept, its structure filled in locally, with no further request."""

from __future__ import annotations

from rollchat.compaction.server import server_summary
from rollchat.domain import Summary
from tests.compaction.test_provider_engine_wire import S1
from tests.providers.test_anthropic_compaction_wire import CONVERSATION, Server, chat, provider
from tests.wire_anthropic_compaction import compaction_server

__all__ = ["compaction_server"]
LOCAL = Summary("local background", ("reading the build log",), ("keep the cache",),
                ("publish the build",))


def test_compaction_unavailable_is_retried_and_then_compacts(compaction_server: Server) -> None:
    server, url = compaction_server
    server.failures.append("compaction_unavailable")
    server.summary = lambda body: S1
    waits: list[float] = []
    outcome = server_summary(provider(url), chat(*CONVERSATION), parent=None, focus=None,
                             max_words=500, max_output_tokens=4096, sleep=waits.append)
    assert outcome.summary is not None and outcome.summary.signed is not None, outcome.reason
    assert outcome.summary.decisions == ("use rabbitmq 3.13",)
    assert len(waits) == 1
    assert [("compaction" in s.body) for s in server.requests] == [True, True]


def test_a_summary_without_markers_is_kept_with_the_structure_filled_in(
        compaction_server: Server) -> None:
    server, url = compaction_server
    server.summary = lambda body: ("## Summary\nThe user read the build log; it passed. "
                                   "Next: publish the build.")
    outcome = server_summary(provider(url), chat(*CONVERSATION), parent=None, focus=None,
                             max_words=500, max_output_tokens=4096, fill=lambda: LOCAL)
    summary = outcome.summary
    assert summary is not None, outcome.reason
    assert summary.background == ("Summary The user read the build log; it passed. Next: "
                                  "publish the build.")
    assert summary.topics == LOCAL.topics and summary.pending == LOCAL.pending
    assert summary.decisions == LOCAL.decisions and not summary.fallback
    assert summary.signed is not None and "publish the build" in summary.signed.data
    assert len(server.requests) == 1  # no second, full-context summary request
