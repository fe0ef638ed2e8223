"""One figure per meaning (issue 25.5): a session's tokens billed read the same in `compact`,
the child's restoration line, `sessions`, the picker and the goodbye; the context size the same
in the toolbar and `context`. Driven through the real CLI (a piped chat, then `sessions`) and
the chat app in process."""

from __future__ import annotations

import re
from pathlib import Path

from rollchat.storage.store import SessionStore
from rollchat.storage.transcript import parse
from rollchat.ui.picker import Picker
from tests.e2e import run_piped, write_config

CONFIG = "ui:\n  offline_word_delay: 0\n"


def test_one_sessions_tokens_billed_read_the_same_everywhere(tmp_path: Path) -> None:
    cfg = write_config(tmp_path / "c.yml", CONFIG)
    flags = ("--provider", "offline", "--config", str(cfg), "--sessions-dir", "sessions")
    done = run_piped(tmp_path, "we picked rabbitmq\nhow do jobs retry?\ncompact\n"
                     "and the alerts?\nexit\n", *flags)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    files = {p.stem: parse(p.read_text()) for p in (tmp_path / "sessions").glob("*.md")}
    [child] = [t for t in files.values() if t.header.resumed_from]
    parent = files[str(child.header.resumed_from)]
    billed = parent.header.total_tokens  # the header's Tokens Billed: THE figure
    size = f"2 queries, {billed:,} tokens billed"
    assert f"Saved session: {parent.header.session_id} ({size})" in out  # compact
    assert child.turns[0].context == f"Resumed from {parent.header.session_id} ({size})"
    # the goodbye: the child's figure, as its header records it
    assert f"1 query, {child.header.total_tokens:,} tokens billed (" in out
    listing = run_piped(tmp_path, "", "sessions", "--sessions-dir", "sessions")
    assert listing.returncode == 0, listing.stderr
    flat = " ".join(listing.stdout.split())
    assert f"2 queries · {billed:,} tokens billed" in flat  # `sessions`
    assert f"1 query · {child.header.total_tokens:,} tokens billed" in flat
    infos = SessionStore(tmp_path / "sessions").list_sessions().sessions
    picker = Picker(infos, SessionStore(tmp_path / "sessions").load_summary)
    previews = []
    for _ in infos:
        previews += [t for _, t in picker.preview()]
        picker.move(1)
    assert any(t.endswith(size) for t in previews)  # the picker
    # no other wording of a session's tokens anywhere
    assert not re.search(r"\d(?:\.\d)?K tokens|Tokens billed:|Queries: ", out + flat)


def test_the_toolbar_and_context_show_one_context_size(tmp_path: Path) -> None:
    from rollchat.ui.repl import handle_line, toolbar_text
    from tests.compaction.test_autocompact import FakeProvider, build_app

    built = build_app(tmp_path, FakeProvider())
    for line in ("hello there", "and a second message, a little longer than the first"):
        built.send(line)
        handle_line(built.app, "context")
        [shown] = re.findall(r"Now: (context [\d,]+ of [\d,]+ tokens \(\d+%\))", built.output)[-1:]
        assert toolbar_text(built.app).startswith(f" {shown} · ")
        assert shown.startswith(f"context {built.session.estimate():,} of ")


def test_contexts_total_is_the_size_shown_when_the_provider_counts_otherwise(
        tmp_path: Path) -> None:
    """A provider that counts more than the local tokenizer (its own template, hidden
    tokens): `context`'s Total, its Now line and the toolbar give one figure, the
    provider's difference a row of its own."""
    from collections.abc import Iterator
    from dataclasses import replace

    from rollchat.providers.base import ChatRequest, StreamEvent, UsageEvent
    from rollchat.ui.repl import handle_line, toolbar_text
    from tests.compaction.test_autocompact import FakeProvider, build_app

    class Generous(FakeProvider):
        def stream(self, request: ChatRequest) -> Iterator[StreamEvent]:
            for event in super().stream(request):
                yield replace(event, usage=replace(event.usage, input_tokens=(
                    event.usage.input_tokens + 700))) if isinstance(event, UsageEvent) else event

    built = build_app(tmp_path, Generous())
    built.send("hello there")
    handle_line(built.app, "context")
    [total] = re.findall(r"\n  Total +([\d,]+) ", built.output)
    [now] = re.findall(r"Now: context ([\d,]+) of", built.output)
    assert total == now == f"{built.session.estimate():,}"
    assert toolbar_text(built.app).startswith(f" context {now} of ")
    [diff] = re.findall(r"Provider's count difference +([\d,-]+) ", built.output)
    assert 650 <= int(diff.replace(",", "")) <= 700
