"""Rendering as strings: streamed markdown, control characters, notices."""

from __future__ import annotations

import io
import os
import termios
from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from pathlib import Path

import pytest
from rich.console import Console

from rollchat.config.settings import AgentConfig, Config
from rollchat.domain import Turn, Usage, answer_blocks
from rollchat.engine.core import EngineSettings
from rollchat.providers.base import ChatRequest, RetryPolicy, StreamEvent
from rollchat.providers.offline import OfflineProvider
from rollchat.storage.store import InMemoryStore
from rollchat.text.wording import human_tokens
from rollchat.ui.render import Renderer, harmless, plain_console, preview, usage_line
from rollchat.ui.stream import MarkdownStream
from tests.drive import chat_app


def _console() -> tuple[Console, io.StringIO]:
    buf = io.StringIO()
    return Console(file=buf, force_terminal=False, color_system=None, width=80), buf


def test_harmless_neutralises_escape_sequences() -> None:
    hostile = "a\x1b[2J\x1b]52;c;ZXZpbA==\x07b\x9b31mc\ttab\nline"
    shown = harmless(hostile)
    assert "\x1b" not in shown and "\x07" not in shown and "\x9b" not in shown
    assert "^[" in shown and "^G" in shown and "\\x9b" in shown
    assert "\ttab\nline" in shown


def test_stream_prints_each_block_once_and_keeps_code_fences_whole() -> None:
    console, buf = _console()
    stream = MarkdownStream(console, live=False)
    text = "First paragraph.\n\n```python\nx = 1\n\ny = 2\n```\n\nLast *words*."
    for ch in text:
        stream.feed(ch)
    stream.close()
    out = buf.getvalue()
    assert out.count("First paragraph.") == 1
    assert "x = 1" in out and "y = 2" in out and out.count("Last words.") == 1
    assert "\x1b" not in out


def test_stream_flushes_completed_blocks_before_the_end() -> None:
    console, buf = _console()
    stream = MarkdownStream(console, live=False)
    stream.feed("Block one.\n\nBlock tw")
    assert "Block one." in buf.getvalue() and "Block tw" not in buf.getvalue()
    stream.close()
    assert "Block tw" in buf.getvalue()


def test_answer_with_escape_codes_is_printed_harmlessly() -> None:
    console, buf = _console()
    r = Renderer(console, interactive=False)
    r.answer_start("Assistant")
    r.answer_delta("title\x1b]0;pwned\x07 here")
    turn = Turn("query", 1, datetime.now(timezone.utc), "q", answer_blocks("x"), usage=Usage(5, 7),
                elapsed=1.25)
    r.answer_end(turn)
    out = buf.getvalue()
    assert "\x1b" not in out and "\x07" not in out and "^[]0;pwned^G" in out
    assert "Tokens: 12 (in: 5, out: 7)" in out


def test_interrupted_and_unanswered_notices() -> None:
    console, buf = _console()
    r = Renderer(console, interactive=False)
    now = datetime.now(timezone.utc)
    for status in ("interrupted", "unanswered"):
        r.answer_start("A")
        r.answer_end(Turn("query", 1, now, "q", (), status=status,  # type: ignore[arg-type]
                          error="rate limited: slow down"),
                     hint="Your message was kept; press Up and Enter to send it again.")
    out = buf.getvalue()
    assert "interrupted before any answer" in out and "rate limited: slow down" in out
    assert "Up and Enter" in out
    assert "Tokens: not reported" in out and "Tokens: 0" not in out


def test_figures() -> None:
    assert human_tokens(999) == "999" and human_tokens(2300) == "2.3K"
    assert human_tokens(200_000) == "200K" and human_tokens(1_500_000) == "1.5M"
    assert usage_line(3.21, Usage(123, 222)) == "Time: 3.2s | Tokens: 345 (in: 123, out: 222)"
    assert "cache read: 5" in usage_line(1, Usage(1, 1, cache_read_tokens=5))


def _turn(status: str = "complete") -> Turn:
    return Turn("query", 1, datetime.now(timezone.utc), "q", answer_blocks("a"), usage=Usage(5, 7),
                elapsed=0.3, status=status)  # type: ignore[arg-type]


@pytest.fixture
def tty() -> Iterator[int]:
    """The terminal side of a pseudo-terminal, echoing as a terminal does by default."""
    master, slave = os.openpty()
    attrs = termios.tcgetattr(slave)
    attrs[3] |= termios.ECHO | termios.ECHOCTL
    termios.tcsetattr(slave, termios.TCSANOW, attrs)
    yield slave
    os.close(master)
    os.close(slave)


def _echo(fd: int) -> int:
    return int(termios.tcgetattr(fd)[3] & (termios.ECHO | termios.ECHOCTL))


def test_echo_is_off_while_an_answer_streams_and_back_after(tty: int) -> None:
    console, _ = _console()
    r = Renderer(console, interactive=True, terminal_fd=tty)
    before = termios.tcgetattr(tty)
    ends: list[Callable[[], None]] = [lambda: r.answer_end(_turn()), r.answer_abort, r.close]
    for end in ends:
        r.answer_start("A")
        assert _echo(tty) == 0  # an echoed ^C would shift the live region by a line
        r.answer_delta("some text")
        end()
        assert termios.tcgetattr(tty) == before


def test_echo_comes_back_when_closing_the_stream_fails(tty: int,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    console, _ = _console()
    r = Renderer(console, interactive=True, terminal_fd=tty)
    r.answer_start("A")

    def broken(self: MarkdownStream) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(MarkdownStream, "close", broken)
    with pytest.raises(KeyboardInterrupt):
        r.answer_end(_turn())
    assert _echo(tty) == termios.ECHO | termios.ECHOCTL


def test_piped_mode_leaves_the_terminal_alone(tty: int) -> None:
    console, _ = _console()
    r = Renderer(console, interactive=False, terminal_fd=tty)
    r.answer_start("A")
    assert _echo(tty) == termios.ECHO | termios.ECHOCTL
    r.answer_end(_turn())


def test_carriage_returns_show_as_line_breaks() -> None:
    assert harmless("line one\r\nline two\r\n") == "line one\nline two\n"
    assert harmless("a\rb") == "a\nb"
    console, buf = _console()
    stream = MarkdownStream(console, live=False)
    for chunk in ("line one\r", "\n\r", "\nline two\r"):  # a "\r\n" split across chunks
        stream.feed(chunk)
    stream.close()
    out = buf.getvalue()
    assert "^M" not in out and "line one" in out and "line two" in out
    assert "\n\n\n" not in out  # one paragraph break, not two


def test_spinner_says_done_only_when_told() -> None:
    console, buf = _console()
    r = Renderer(console, interactive=True)
    with r.spinner("Working...") as step:
        pass
    assert "done" not in buf.getvalue()
    with r.spinner("Working...") as step:
        step.done_text = "done"
    assert "Working... done" in buf.getvalue()


class _Interrupted:
    name = "interrupted"

    def stream(self, request: ChatRequest) -> Iterator[StreamEvent]:
        raise KeyboardInterrupt
        yield  # pragma: no cover


def test_summary_spinner_says_done_only_on_success(tmp_path: Path) -> None:
    outputs = []
    for summaries in (OfflineProvider(), _Interrupted()):
        console, buf = _console()
        agent = AgentConfig(key="a", name="A", provider="offline")
        engine = EngineSettings(OfflineProvider(), model="offline", system="s",
                        max_output_tokens=500, temperature=None, retry=RetryPolicy(0, 0.0, 0.0))
        app = chat_app(renderer=Renderer(console, interactive=True),
                       config=Config(agents={"a": agent}), agent=agent, engine_settings=engine,
                       summary_provider=summaries, summary_model="offline",
                       provider_name="offline", store=InMemoryStore(), confirm=lambda q: False,
                       context_window=200_000)
        app.send("plan the garden beds")
        app.compact()
        outputs.append(buf.getvalue())
    assert "Generating session summary... done" in outputs[0]
    assert "Generating session summary... done" not in outputs[1]
    assert "summary failed (interrupted)" in " ".join(outputs[1].split())


def test_text_before_a_tool_call_is_shown_before_its_line() -> None:
    console, buf = _console()
    r = Renderer(console, interactive=False)
    r.answer_start("A")
    r.answer_delta("Let me look that up")
    r.tool_call("read_file notes.md")
    r.tool_result("read_file", "alpha beta gamma delta " * 20)
    r.answer_delta("Found it.")
    r.answer_end(_turn())
    out = buf.getvalue()
    assert out.index("Let me look that up") < out.index("→ tool") < out.index("Found it.")
    assert out.count("Let me look that up") == 1
    result_line = next(line for line in out.splitlines() if line.startswith("← read_file"))
    assert result_line.endswith("…") and len(result_line) <= 80
    assert result_line[:-1].rstrip().split()[-1] in ("alpha", "beta", "gamma", "delta")


def test_preview_cuts_at_a_word_boundary() -> None:
    assert preview("short", 10) == "short"
    assert preview("hello wonderful world", 12) == "hello…"
    assert preview("abcdefghijklmnop", 8) == "abcdefg…"


def test_notices_are_not_number_highlighted() -> None:
    buf = io.StringIO()
    console = Console(file=buf, force_terminal=True, color_system="truecolor", width=100)
    r = Renderer(console, interactive=False)
    r.dim(usage_line(0.3, Usage(1200, 34)))
    r.info("Queries: 3 | Tokens billed: 1,234")
    r.warn("compaction left 12 of 10 tokens")
    out = buf.getvalue()
    assert "Time: 0.3s | Tokens: 1,234 (in: 1,200, out: 34)" in out
    assert "Queries: 3 | Tokens billed: 1,234" in out and "left 12 of 10 tokens" in out


def test_banner_wording() -> None:
    console, buf = _console()
    Renderer(console, interactive=False).banner(
        agent="Assistant", model="offline-model", provider="offline",
        reason="no API key configured", where="/tmp/s")
    out = buf.getvalue()
    assert "offline model (no API key configured)" in out and "via offline" not in out
    assert "Alt+Enter" not in out and "Ctrl-D" not in out  # piped: no keys to press
    console, buf = _console()
    Renderer(console, interactive=True).banner(
        agent="Assistant", model="llama3", provider="openai", reason="configured",
        where="/tmp/s", server="https://user:s3cret@llm.example.com:8443/v1?key=abc")
    out = buf.getvalue()
    assert "llama3 via openai (configured)" in out and "llm.example.com:8443" in out
    assert "s3cret" not in out and "key=abc" not in out and "Alt+Enter" in out


def test_lines_before_rich_is_loaded(capsys, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Without a console the banner and notices are written directly (rich loads with the
    first answer): styled in a terminal unless NO_COLOR, plain when piped, never markup."""
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    r = Renderer(interactive=True)
    r.banner(agent="Assistant", model="m", provider="offline", reason="no API key configured",
             where="/tmp/s")
    r.warn("[bold]not markup[/] \x1b]0;title\x07")
    out = capsys.readouterr().out
    assert "\x1b[1mrollchat\x1b[0m · Assistant · offline model" in out
    assert "\x1b[33mWarning:\x1b[0m [bold]not markup[/] ^[]0;title^G" in out
    assert r._console is None  # nothing so far needed rich
    monkeypatch.setenv("NO_COLOR", "1")
    Renderer(interactive=True).error("disk full")
    assert capsys.readouterr().out == "Error: disk full\n"
    piped = Renderer(interactive=False)
    piped.dim("plain")
    assert capsys.readouterr().out == "plain\n"
    piped.info("after rich")  # once the console exists, lines go through it
    piped.console.print("x")
    piped.info("through rich")
    assert capsys.readouterr().out == "after rich\nx\nthrough rich\n"


def test_sessions_mark_a_lower_bound_token_count(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from rollchat.storage.store import SessionInfo

    console, buf = _console()
    now = datetime.now(timezone.utc)
    info = SessionInfo(1, "a_20261122_000000_abcd", "a_20261122_000000_abcd.md", tmp_path,
                       "A", "config:a", "m", "offline", now, 3, 1500, "hi", False, None, None,
                       tokens_exact=False)
    Renderer(console, interactive=False).sessions([info], [])
    assert "≥1,500 tokens" in buf.getvalue()


def test_help_rows_wrap_under_their_column_in_a_terminal_and_stay_whole_piped() -> None:
    text = ("summarize this session and continue in a new one (focus text steers the "
            "summary)")
    console, buf = _console()  # 80 columns
    Renderer(console, interactive=True).entry("compact [focus]", text)
    rows = buf.getvalue().splitlines()
    assert rows[0].startswith("  compact [focus]        summarize") and len(rows) == 2
    assert rows[1].startswith(" " * 25) and rows[1][25] != " "  # under the text, not at 0
    assert all(len(row) <= 80 for row in rows)
    assert " ".join(" ".join(rows).split()) == f"compact [focus] {text}"
    buf = io.StringIO()
    Renderer(plain_console(buf), interactive=False).entry("compact [focus]", text)
    assert buf.getvalue() == f"  compact [focus]        {text}\n"  # piped: one line each


def test_wrapping_before_rich_is_loaded_hangs_the_continuation_lines() -> None:
    from rollchat.ui.render import _wrapped

    segments = [("  1. ", "bold"), ("assistant_x", "cyan"),
                (" · Assistant · 2026-11-24 01:04 · 1 query · 1.2K tokens billed", "")]
    out = _wrapped(segments, 40, hang=5)
    assert [style for _, style in out] == ["bold", "cyan", ""]  # styles kept, in order
    lines = "".join(text for text, _ in out).split("\n")
    assert len(lines) == 3 and all(len(line) <= 40 for line in lines)
    assert all(line.startswith("     ") and line[5] != " " for line in lines[1:])
    assert " ".join("".join(lines).split()) == " ".join(
        "".join(t for t, _ in segments).split())  # nothing lost
    assert "\n     " not in "".join(t for t, _ in _wrapped(segments, 22, hang=5))  # too narrow


def test_a_long_fact_wraps_under_its_text_in_a_terminal() -> None:
    from rollchat.memory.records import Fact
    from rollchat.ui.memory_view import FACT_INDENT, draw_facts

    fact = Fact(12, "prefers tabs over spaces in every Go and Python file of the billing "
                "service", "preference", 1.0, "assistant_20261124_005457_fff2", 1,
                datetime(2026, 11, 24, tzinfo=timezone.utc), None)
    console, buf = _console()  # 80 columns
    draw_facts(Renderer(console, interactive=True), [fact], [])
    rows = buf.getvalue().splitlines()
    assert rows[0].startswith("  12  prefers tabs") and len(rows) >= 3
    assert all(row.startswith(" " * FACT_INDENT) and row[FACT_INDENT] != " "
               for row in rows[1:-1]) and all(len(row) <= 80 for row in rows)
