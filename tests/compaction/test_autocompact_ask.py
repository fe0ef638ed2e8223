"""Control of automatic compaction: ``session.auto_compact: true | false | ask`` in the config,
the question asked at the threshold (compact now / later / off for this session), the in-chat
``auto`` command, and the toolbar's gauge (coloured at 70/85/95% of the window, with a hint)."""

from __future__ import annotations

import io
import re
import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest

from rollchat.compaction.policy import GAUGE_LEVELS, PolicyState, gauge_level, plan
from rollchat.config.settings import SessionConfig, auto_mode
from rollchat.errors import ConfigError
from rollchat.events import CompactionStarted
from rollchat.session.core import CompactChoice
from rollchat.ui.repl import gauge, handle_line, toolbar_parts, toolbar_text
from tests.compaction.test_autocompact import Built, FakeProvider, build_app, user_message
from tests.compaction.test_policy import OVER
from tests.config.test_config import load
from tests.e2e import PROMPT, clean_env, run_piped, write_config
from tests.terminal import Terminal, run_chat

# ---------------------------------------------------------------- config


@pytest.mark.parametrize(("value", "mode"), [
    ("true", "on"), ("false", "off"), ("ask", "ask"), ("on", "on"), ("off", "off"),
    ("yes", "on"),
])
def test_auto_compact_accepts_true_false_and_ask(tmp_path: Path, value: str, mode: str) -> None:
    config = load(tmp_path, f"session:\n  auto_compact: {value}\n")
    assert auto_mode(config.session.auto_compact) == mode


@pytest.mark.parametrize("value", ["maybe", "Ask", "1", "[ask]"])
def test_auto_compact_rejects_anything_else_naming_the_choices(tmp_path: Path,
                                                              value: str) -> None:
    with pytest.raises(ConfigError) as info:
        load(tmp_path, f"session:\n  auto_compact: {value}\n")
    assert re.fullmatch(r"rollchat\.yml:2: session\.auto_compact: must be true, false or ask "
                        r"\(on/off work too\) \(got .*\)", str(info.value)), str(info.value)


def test_bad_auto_compact_exits_2_with_the_message(tmp_path: Path) -> None:
    config = write_config(tmp_path / "c.yml", "session:\n  auto_compact: sometimes\n")
    done = run_piped(tmp_path, "", "--config", str(config), env=clean_env(tmp_path / "home"))
    assert done.returncode == 2
    assert "session.auto_compact: must be true, false or ask" in done.stderr
    assert "'sometimes'" in done.stderr


# ---------------------------------------------------------------- policy


def test_gauge_levels_are_70_85_95_percent_of_the_window() -> None:
    assert GAUGE_LEVELS == (0.70, 0.85, 0.95)
    cases = [(0, 0), (699, 0), (700, 1), (849, 1), (850, 2), (949, 2), (950, 3), (1200, 3)]
    assert [gauge_level(used, 1000) for used, _ in cases] == [lvl for _, lvl in cases]
    assert gauge(690, 1000) == (0, None)
    assert gauge(700, 1000) == (1, "compact soon")
    assert gauge(850, 1000) == (2, "type compact")
    assert gauge(960, 1000) == (3, "type compact now")


ASK = replace(OVER, ask=True)  # 81% of a 10,000 window, budget 8,000; 9,000 can be sent


def test_ask_proposes_instead_of_compacting() -> None:
    decided = plan(ASK)
    assert decided.compact and decided.ask and "81%" in decided.reason
    assert not plan(replace(ASK, ask=False)).ask


def test_ask_compacts_without_asking_when_the_request_would_not_fit() -> None:
    decided = plan(replace(ASK, estimate=9_100))  # 9,000 can be sent
    assert decided.compact and not decided.ask
    assert "would not fit without compacting" in decided.reason
    put_off = PolicyState(put_off_level=3)
    assert plan(replace(ASK, estimate=9_100, state=put_off)).compact  # "later" never blocks it


def test_later_waits_for_the_next_gauge_level() -> None:
    later = PolicyState(put_off_level=gauge_level(8_100, 10_000))  # said at 81%: level 1
    decided = plan(replace(ASK, state=later, estimate=8_400))
    assert not decided.compact and decided.reason == (
        "put off until the context reaches 85% of the window")
    assert decided.presummarize  # the summary is prepared meanwhile: "compact" is quick
    again = plan(replace(ASK, state=later, estimate=8_500))
    assert again.compact and again.ask


def test_provider_refusal_compacts_without_asking() -> None:
    decided = plan(replace(ASK, refused=True, state=PolicyState(put_off_level=3)))
    assert decided.compact and not decided.ask


# ---------------------------------------------------------------- in a chat


class Asker:
    """Answers the compaction question with ``answers`` in turn (the last one repeated)."""

    def __init__(self, *answers: CompactChoice | None) -> None:
        self.answers = list(answers)
        self.questions: list[str] = []

    def __call__(self, question: str) -> CompactChoice | None:
        self.questions.append(question)
        return self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]


def asking(tmp_path: Path, *answers: CompactChoice | None,
           provider: FakeProvider | None = None) -> tuple[Built, Asker]:
    built = build_app(tmp_path, provider or FakeProvider(),
                      session=SessionConfig(auto_compact="ask"))
    asker = Asker(*answers)
    built.session.compactor.ask = asker if answers != (None,) else None
    return built, asker


def percents(asker: Asker) -> list[int]:
    return [int(q.split("%")[0].removeprefix("Context at ")) for q in asker.questions]


def test_compact_now_compacts_once_asked(tmp_path: Path) -> None:
    provider = FakeProvider()
    built, asker = asking(tmp_path, "compact", provider=provider)
    for i in range(45):
        assert built.send(user_message(i)).status == "ok"
    assert built.compactions and len(asker.questions) == len(built.compactions)
    question = asker.questions[0]
    assert re.fullmatch(r"Context at \d\d% \(≈\d\.\dK of 4K tokens\)\. Compact now\? "
                        r"\[c\]ompact / \[l\]ater / \[o\]ff for this session: ", question)
    assert all(80 <= p < 88 for p in percents(asker))  # at the budget (80%), before 87.5%
    assert len(provider.of("restore")) == len(built.compactions)


def test_later_asks_again_at_the_next_level_then_compacts_when_it_must(tmp_path: Path) -> None:
    provider = FakeProvider()
    built, asker = asking(tmp_path, "later", provider=provider)
    for i in range(60):
        assert built.send(user_message(i)).status == "ok"
    # asked at the budget (80%: level 1), then once more from 85% (level 2); from then on
    # until the request would not fit (87.5% of the window here), nothing is asked
    assert [gauge_level(p * 40, 4000) for p in percents(asker)[:2]] == [1, 2]
    assert "asking again when the context reaches 85% of the window" in built.output
    forced = [e for e in built.events if isinstance(e, CompactionStarted)]
    assert forced and all("would not fit without compacting" in e.reason for e in forced)
    window = built.session.budget.window
    assert max(provider.sizes) <= window  # no call ever failed for lack of room
    assert len(provider.of("chat")) == 60


def test_off_for_this_session_stops_asking_until_auto_ask(tmp_path: Path) -> None:
    built, asker = asking(tmp_path, "off")
    for i in range(45):
        assert built.send(user_message(i)).status == "ok"
    assert len(asker.questions) == 1 and built.compactions == []
    assert built.session.auto_mode == "off"
    assert "Automatic compaction is off for this session" in built.output
    asker.answers = ["compact"]
    handle_line(built.app, "auto ask")
    assert "Automatic compaction: ask for this session (was off)" in built.output
    built.send(user_message(45))  # (under 87.5%: the request would still fit)
    assert len(asker.questions) == 2 and len(built.compactions) == 1


def test_auto_ask_while_asking_keeps_a_later_answer(tmp_path: Path) -> None:
    built, asker = asking(tmp_path, "later")
    i = 0
    while not asker.questions:
        assert built.send(user_message(i)).status == "ok"
        i += 1
    assert built.session.guards.put_off_level is not None
    handle_line(built.app, "auto ask")  # the mode it has: nothing changes
    assert ("Automatic compaction: ask for this session (unchanged): asks at the budget: "
            "compact now, later, or off for this session; the compaction put off is proposed "
            "again when the context reaches 85% of the window.") in " ".join(
                built.output.split())
    built.send(user_message(i))  # the very next turn: still put off, not asked again
    assert len(asker.questions) == 1
    handle_line(built.app, "auto on")
    handle_line(built.app, "auto ask")  # a change of mode: the put-off answer is dropped
    built.send(user_message(i + 1))
    assert len(asker.questions) == 2


def test_nobody_to_ask_counts_as_later_and_says_so(tmp_path: Path) -> None:
    built, _ = asking(tmp_path, None)
    for i in range(48):
        assert built.send(user_message(i)).status == "ok"
    text = " ".join(built.output.split())
    assert ("Not compacting now (auto_compact: ask, and no terminal to ask); asking again "
            "when the context reaches 85% of the window.") in text


# ---------------------------------------------------------------- the auto command


def test_auto_command_shows_and_changes_the_mode(tmp_path: Path) -> None:
    built = build_app(tmp_path, FakeProvider())
    handle_line(built.app, "auto")
    assert ("Automatic compaction: on (from the config): compacts automatically when the "
            "next prompt would pass the budget; the budget is 3,200 tokens.") in built.output
    handle_line(built.app, "/auto OFF")
    assert "Automatic compaction: off for this session (was on)" in built.output
    assert built.session.auto_mode == "off"
    handle_line(built.app, "auto off")
    assert "off for this session (unchanged)" in built.output
    handle_line(built.app, "/auto sometimes")
    assert "Error: usage: auto [on|off|ask] (got 'sometimes')" in built.output
    assert built.session.auto_mode == "off"
    handle_line(built.app, "auto")
    assert "Automatic compaction: off (set in this chat)" in built.output
    handle_line(built.app, "auto mode is what I want")  # chat, not a command
    assert built.session.state.queries == 1


def test_auto_on_compacts_again_after_off(tmp_path: Path) -> None:
    built = build_app(tmp_path, FakeProvider(), session=SessionConfig(auto_compact=False))
    for i in range(46):
        built.send(user_message(i))
    assert built.compactions == []
    handle_line(built.app, "auto on")
    built.send(user_message(46))
    assert len(built.compactions) == 1


# ---------------------------------------------------------------- the toolbar


def test_toolbar_gauge_is_coloured_with_a_hint_from_70_percent(tmp_path: Path) -> None:
    built = build_app(tmp_path, FakeProvider(), session=SessionConfig(auto_compact=False))
    seen: dict[int, str] = {}
    for i in range(56):
        built.send(user_message(i))
        level = gauge_level(built.session.context_tokens or 0, 4000)  # the figure shown
        seen.setdefault(level, toolbar_text(built.app))
        style = toolbar_parts(built.app)[0][0]
        assert ("bg:" in style) == (level > 0)
    assert set(seen) == {0, 1, 2, 3}
    assert "·" not in seen[0].split(")")[0]  # no hint below 70%
    assert re.match(r" context \d,\d{3} of 4,000 tokens \(7\d% · compact soon\) · ", seen[1])
    assert re.match(r" context \d,\d{3} of 4,000 tokens \(\d\d% · type compact\) · ", seen[2])
    assert re.match(r" context \d,\d{3} of 4,000 tokens \(\d\d% · type compact now\) · ",
                    seen[3])


CONFIG = """\
agents:
  assistant:
    provider: offline
    max_output_tokens: 100
models:
  offline:
    context_window: 4096
session:
  auto_compact: ask
  compact_threshold: 0.5
ui:
  offline_word_delay: 0
"""


def test_the_question_in_a_terminal_takes_one_line_and_an_answer(tmp_path: Path) -> None:
    """As a terminal runs the chat (in process, tests/terminal.py): the question is one line
    that takes an answer (later, then compact), and the message is answered either way."""
    config = write_config(tmp_path / "c.yml", CONFIG)
    long = ("We decided the invoice retry queue keeps its lock for now and the nightly "
            "reconciliation job moves to 02:00; remember the cents rounding bug. ") * 2
    answers = ["l", "c"]
    asked: list[int] = []  # the percentages in the questions

    def script(term: Terminal) -> None:
        term.expect(PROMPT)
        for _ in range(30):
            term.sendline(long)
            found = term.expect(r"Context at (\d+)% \(≈[\d.]+K of 4\.1K tokens\)\. "
                                r"Compact now\? \[c\]ompact / \[l\]ater / \[o\]ff for this "
                                r"session \[c/l/o, Enter\]:|Tokens: \d+")
            if found.group(0).startswith("Context"):
                asked.append(int(found.group(1)))
                answer = answers.pop(0)
                term.sendline(answer)
                term.expect(r"Not compacting now; asking again when the context reaches \d\d%"
                            if answer == "l" else r"compacting \(window 4\.1K\)")
                if answer == "c":
                    term.expect("Compacted .* into a summary; continuing in a new session")
                term.expect(r"Tokens: \d+")  # the message was answered
            if not answers:
                break
        term.expect(PROMPT)
        term.sendline("exit")
        term.expect_exact("Goodbye!")

    assert run_chat(tmp_path, ["--config", str(config)], script) == 0
    assert answers == []
    levels = [gauge_level(percent, 100) for percent in asked]
    assert asked[0] >= 50 and levels[1] > levels[0]  # at the budget, then a level higher


def test_the_toolbar_drawn_by_the_repl_is_coloured_with_its_hint(tmp_path: Path) -> None:
    """The REPL in process (prompt_toolkit pipe input, a VT100 output into a string): the
    toolbar at 88% of the window is drawn orange and bold, with its hint."""
    from prompt_toolkit.data_structures import Size
    from prompt_toolkit.input import create_pipe_input
    from prompt_toolkit.output.vt100 import Vt100_Output

    from rollchat.ui.repl import run_interactive
    from rollchat.ui.starting import Starting

    built = build_app(tmp_path, FakeProvider(), session=SessionConfig(auto_compact=False))
    for i in range(48):
        built.send(user_message(i))
    assert gauge_level(built.session.engine.context.last_prompt_tokens or 0, 4000) == 2
    screen = io.StringIO()
    output = Vt100_Output(screen, lambda: Size(rows=30, columns=150), term="xterm",
                          enable_cpr=True)
    chat = Starting(lambda: (built.app, []), label=" starting ", out=built.app.out)
    chat.get()

    def wait_for(text: str) -> None:
        for _ in range(500):
            if text in screen.getvalue():
                return
            time.sleep(0.01)
        raise AssertionError(f"{text!r} never drawn: {screen.getvalue()!r}")

    with create_pipe_input() as keys:
        def type_keys() -> None:
            wait_for("You:")
            keys.send_text("\x1b[1;1R")  # the cursor position report the toolbar waits for
            wait_for("type compact")
            keys.send_text("exit\r")

        typing = threading.Thread(target=type_keys, daemon=True)
        typing.start()
        run_interactive(chat, history_file=tmp_path / "history", input=keys, output=output)
        typing.join(5)
    drawn = screen.getvalue()
    assert re.search(r"\x1b\[0;30;48;5;208;1m context 3,\d{3} of 4,000 tokens "
                     r"\(8\d% · type compact\) \x1b\[0;7m· 48 queries · Rollo", drawn), drawn
