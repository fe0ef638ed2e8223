"""Choosing the session a chat starts from: ``rollchat -c`` (the most recent), a bare
``--resume`` and ``rollchat pick`` (the picker: fuzzy filter, summary preview), in a terminal
and without one; the fuzzy ranking and the picker's state on their own."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from rollchat.cli.argv import chat_args
from rollchat.domain import Summary
from rollchat.storage.listing import SessionInfo
from rollchat.storage.store import SessionStore
from rollchat.storage.transcript import parse
from rollchat.text.fuzzy import Candidate, Matcher
from rollchat.ui.picker import Picker
from tests.e2e import PROMPT, run_piped, write_config
from tests.sessions_helpers import summary, write_session
from tests.terminal import Screen, Terminal, run_chat

FAST = "ui:\n  offline_word_delay: 0\n"
OLD = "assistant_20260501_090000_a1a1"
REDIS = "assistant_20260501_091000_b2b2"
NEWEST = "assistant_20260501_092000_c3c3"


def _three(tmp_path: Path) -> Path:
    sessions = tmp_path / "sessions"
    write_session(sessions, OLD, ["plan the garden beds"], minutes=0,
                  summary=summary(topics=("garden layout",), decisions=("tomatoes by the wall",)))
    write_session(sessions, REDIS, ["set up the redis cache", "which port?"], minutes=10,
                  summary=summary(topics=("redis caching",),
                                  decisions=("redis listens on port 6380",),
                                  pending=("write the eviction tests",)))
    write_session(sessions, NEWEST, ["draft the release notes"], minutes=20)  # no summary
    return sessions


# ------------------------------------------------------------------ fuzzy ranking

def _cand(key: str, *fields: str, minutes: int = 0) -> Candidate:
    return Candidate(key, fields, datetime(2026, 1, 1, tzinfo=timezone.utc)
                     + timedelta(minutes=minutes))


def test_fuzzy_every_word_must_match_within_one_field_best_first_then_recent() -> None:
    matcher = Matcher([
        _cand("a", "set up the redis cache", minutes=1),
        _cand("b", "rewrite docs", minutes=2),  # r..e..d..s spread out: weaker than "redis"
        _cand("c", "red", "is", minutes=3),  # "redis" only across two fields: no match
        _cand("d", "Redis tuning", minutes=0),  # a word start, older than a
    ])
    assert [c.key for c in matcher.rank("")] == ["c", "b", "a", "d"]  # most recent first
    assert [c.key for c in matcher.rank("redis")] == ["a", "d"]
    assert [c.key for c in matcher.rank("rds")] == ["a", "d", "b"]  # tight spans rank first
    assert [c.key for c in matcher.rank("redis tun")] == ["d"]  # every word must match
    assert matcher.rank("zzz") == []


def test_fuzzy_ranks_a_word_start_above_a_substring_inside_a_word() -> None:
    matcher = Matcher([_cand("inside", "preparing", minutes=5), _cand("start", "a par", minutes=0)])
    assert [c.key for c in matcher.rank("par")] == ["start", "inside"]


# ------------------------------------------------------------------ the picker's state

def _infos(sessions: Path) -> list[SessionInfo]:
    return SessionStore(sessions).list_sessions().sessions


def test_picker_reads_a_summary_only_when_its_session_is_highlighted(tmp_path: Path) -> None:
    sessions = _three(tmp_path)
    store = SessionStore(sessions)
    read: list[str] = []

    def load(info: SessionInfo) -> Summary | None:
        read.append(info.session_id)
        return store.load_summary(info)

    picker = Picker(_infos(sessions), load)
    assert picker.current is not None and picker.current.session_id == NEWEST
    text = "\n".join(t for _, t in picker.preview())
    assert "No summary yet" in text and read == []  # NEWEST has none: nothing read
    picker.move(1)
    text = "\n".join(t for _, t in picker.preview())
    assert "- redis listens on port 6380" in text and "- write the eviction tests" in text
    picker.preview()
    assert read == [REDIS]  # once, cached
    picker.filter("garden")
    assert [c.key for c in picker.matches] == [OLD] and picker.selected == 0
    assert "tomatoes by the wall" in "\n".join(t for _, t in picker.preview())
    assert read == [REDIS, OLD]
    picker.filter("nothing like this")
    assert picker.current is None and "No session matches" in picker.preview()[0][1]


def test_picker_scrolls_and_shows_hostile_text_harmlessly(tmp_path: Path) -> None:
    sessions = tmp_path / "sessions"
    for n in range(30):
        write_session(sessions, f"assistant_20260501_0900{n:02d}_{n:04x}",
                      [f"question {n} \x1b]0;pwned\x07 \u202eevil"], minutes=n,
                      summary=summary(topics=("a \x1b[2J topic",)))
    picker = Picker(_infos(sessions), SessionStore(sessions).load_summary)
    picker.move(12)
    rows = picker.rows(5)
    assert len(rows) == 5 and rows[-1][0] and rows[-1][1].session_id.endswith("_0011")
    picker.move(-12)
    assert picker.rows(5)[0][0]  # scrolled back up to the selection
    shown = [picker.row_text(info, 200) for _, info in rows]
    shown += [t for _, t in picker.preview()]
    assert not any("\x1b" in s or "\x07" in s or "\u202e" in s for s in shown)
    assert any("^[]0;pwned^G" in s for s in shown) and any("^[[2J" in s for s in shown)


# ------------------------------------------------------------------ the command line

def test_a_bare_resume_becomes_the_picker_and_a_resume_with_a_value_stays() -> None:
    assert chat_args(["--resume"]) == ["--pick"]
    assert chat_args(["--resume", "--yes"]) == ["--pick", "--yes"]
    assert chat_args(["--resume", "3", "--yes"]) == ["--resume", "3", "--yes"]
    assert chat_args(["--resume=ab12"]) == ["--resume=ab12"]
    assert chat_args(["--model", "--resume"]) == ["--model", "--resume"]  # a value
    assert chat_args(["--resume", "--model", "m", "agent.py"]) == [
        "--pick", "--model", "m", "--agent-file", "agent.py"]
    assert chat_args(["show", "--resume"]) == ["show", "--resume"]  # a subcommand's words


def test_continue_resumes_the_most_recent_session(tmp_path: Path) -> None:
    cfg = write_config(tmp_path / "rollchat.yml", FAST)
    sessions = _three(tmp_path)
    result = run_piped(tmp_path, "and now?\nexit\n", "--config", str(cfg), "-c")
    assert result.returncode == 0, result.stderr
    assert f"Found: {NEWEST}" in result.stdout
    [child] = [p for p in sessions.glob("*.md") if p.stem not in (OLD, REDIS, NEWEST)]
    assert parse(child.read_text()).header.resumed_from == NEWEST


def test_continue_without_sessions_says_so_and_starts_nothing(tmp_path: Path) -> None:
    cfg = write_config(tmp_path / "rollchat.yml", FAST)
    result = run_piped(tmp_path, "hello\n", "--config", str(cfg), "--continue")
    assert result.returncode == 1
    assert "no saved sessions in" in result.stderr and "nothing to continue" in result.stderr
    assert result.stdout == "" and not list(tmp_path.glob("sessions/*.md"))


@pytest.mark.parametrize("args", [["--resume"], ["pick"], ["--yes", "--resume"]])
def test_choosing_without_a_terminal_is_refused(tmp_path: Path, args: list[str]) -> None:
    _three(tmp_path)
    result = run_piped(tmp_path, "hello\n", *args)
    assert result.returncode == 2
    assert "choosing a session needs a terminal" in result.stderr
    assert len(list(tmp_path.glob("sessions/*.md"))) == 3  # no chat was started


@pytest.mark.parametrize("args", [["-c", "--resume", "2"], ["-c", "--resume"], ["-c", "pick"]])
def test_two_ways_to_choose_at_once_are_refused(tmp_path: Path, args: list[str]) -> None:
    result = run_piped(tmp_path, "", *args)
    assert result.returncode == 2 and "rollchat: error:" in result.stderr
    assert "--continue" in result.stderr


# ------------------------------------------------------------------ in a terminal (in process)

def test_picker_filters_previews_and_resumes_the_chosen_session(tmp_path: Path) -> None:
    cfg = write_config(tmp_path / "rollchat.yml", FAST)
    sessions = _three(tmp_path)

    def script(term: Terminal) -> None:
        term.expect_exact("3 of 3 sessions")
        term.expect_exact("No summary yet")  # the newest is highlighted first
        term.send("rds")  # fuzzy: "redis" (tight), "garden beds" (spread out); not NEWEST
        term.expect_exact("redis listens on port 6380")  # the preview: its decisions
        term.expect_exact("write the eviction tests")
        term.send("\x1b[B")  # Down: the garden session
        term.send("\x1b[A")  # Up: back to redis
        term.send("\x1b[B")  # Down again
        term.send("\r")
        term.expect_exact(f"Found: {OLD}")
        term.expect_exact(PROMPT)
        term.sendline("and now?")
        term.expect_exact("Tokens: ")
        term.expect_exact(PROMPT)
        term.sendline("exit")

    assert run_chat(tmp_path, ["--config", str(cfg), "--resume"], script) == 0
    [new] = [p for p in sessions.glob("*.md") if p.stem not in (OLD, REDIS, NEWEST)]
    assert parse(new.read_text()).header.resumed_from == OLD


@pytest.mark.parametrize(("key", "status"), [("\x1b", 1), ("\x03", 130)])
def test_pick_cancelled_starts_no_chat(tmp_path: Path, key: str, status: int) -> None:
    cfg = write_config(tmp_path / "rollchat.yml", FAST)
    _three(tmp_path)

    screens: list[Screen] = []

    def script(term: Terminal) -> None:
        screens.append(term.screen)
        term.expect_exact("3 of 3 sessions")
        term.send("garden")
        term.expect_exact("tomatoes by the wall")
        term.send(key)
        term.expect_exact("no session chosen")

    assert run_chat(tmp_path, ["--config", str(cfg), "pick"], script) == status
    assert PROMPT not in screens[0].text()
    assert len(list(tmp_path.glob("sessions/*.md"))) == 3


def test_continue_resumes_the_session_used_last_not_the_one_started_last(
        tmp_path: Path) -> None:
    """A long chat begun in the morning and used until now beats a quick one begun later and
    long closed; a session already continued elsewhere (its summary edited since) is not it."""
    import os
    from dataclasses import replace

    from rollchat.storage.transcript import render

    cfg = write_config(tmp_path / "rollchat.yml", FAST)
    sessions = _three(tmp_path)  # OLD (09:00), REDIS (09:10), NEWEST (09:20)
    edited = sessions / f"{REDIS}.md"  # continued in NEWEST, then its summary edited
    t = parse(edited.read_text())
    edited.write_text(render(replace(t, header=replace(t.header, continued_in=(NEWEST,)))))
    hour = 3600
    stamp = os.path.getmtime(edited)
    for name, ago in ((NEWEST, 2 * hour), (OLD, hour), (REDIS, 0)):
        os.utime(sessions / f"{name}.md", (stamp - ago, stamp - ago))
    result = run_piped(tmp_path, "and now?\nexit\n", "--config", str(cfg), "-c")
    assert result.returncode == 0, result.stderr
    assert f"Found: {OLD}" in result.stdout


def test_a_first_question_longer_than_the_head_window_is_still_listed_and_matched(
        tmp_path: Path) -> None:
    """A session whose first question was pasted whole (a 1 MB log) was listed with no first
    line, and the picker showed '(no queries)' for it; its start is shown and matched now."""
    sessions = tmp_path / "sessions"
    write_session(sessions, OLD, ["why does this crash? " + "Traceback é " * 90_000])
    listed = run_piped(tmp_path, "", "sessions", "--sessions-dir", "sessions")
    assert listed.returncode == 0, listed.stderr
    assert "why does this crash? Traceback é" in listed.stdout
    infos = SessionStore(sessions).list_sessions().sessions
    picker = Picker(infos, lambda info: None)
    picker.filter("crash")
    assert picker.current is not None and picker.current.session_id == OLD
    assert "why does this crash?" in picker.row_text(picker.current, 200)


def test_picker_preview_of_a_huge_summary_item_stays_short_and_counts_read_well(
        tmp_path: Path) -> None:
    """One 50 KB decision filled the whole preview pane (and pushed the rest off it); a
    session of one query read '1 queries'."""
    sessions = tmp_path / "sessions"
    write_session(sessions, OLD, ["plan"], summary=summary(
        decisions=("x" * 50_000,), pending=("write the eviction tests",)))
    picker = Picker(_infos(sessions), SessionStore(sessions).load_summary)
    lines = [t for _, t in picker.preview()]
    assert max(len(t) for t in lines) < 600
    assert "- write the eviction tests" in lines
    assert any("1 query, " in t for t in lines) and not any("1 queries" in t for t in lines)


# ------------------------------------------------------------------ titles (the sessions index)

def test_picker_rows_show_titles_and_the_filter_matches_them(tmp_path: Path) -> None:
    """The picker lists through the sessions index, which holds each session's title (the
    header's Title, else its first line): a row shows it, the filter matches it, and a
    hostile title (escapes, a newline) is drawn harmlessly."""
    sessions = _three(tmp_path)
    write_session(sessions, "assistant_20260501_093000_d4d4", ["help me with the cluster"],
                  minutes=30, title="Kubernetes upgrade plan")
    write_session(sessions, "assistant_20260501_094000_e5e5", ["hi"], minutes=40,
                  title="\x1b]0;pwned\x07 sneaky\nsecond line \u202eevil")
    picker = Picker(_infos(sessions), SessionStore(sessions).load_summary)
    picker.filter("kubernetes upgrade")  # words only the title holds
    assert [c.key for c in picker.matches] == ["assistant_20260501_093000_d4d4"]
    assert picker.current is not None
    assert "Kubernetes upgrade plan" in picker.row_text(picker.current, 200)
    assert "help me with the cluster" not in picker.row_text(picker.current, 200)
    preview = [t for _, t in picker.preview()]
    assert preview[0] == "Kubernetes upgrade plan" and "First: help me with the cluster" in preview
    picker.filter("kbup")  # letters in order, within the title
    assert picker.current is not None and picker.current.session_id.endswith("_d4d4")
    picker.filter("sneaky")
    assert picker.current is not None
    shown = [picker.row_text(picker.current, 200), *(t for _, t in picker.preview())]
    assert not any(ch in s for s in shown for ch in ("\x1b", "\x07", "\n", "\u202e"))
    assert "^[]0;pwned^G sneaky" in shown[0]
    picker.filter("redis")  # an untitled session: its first line is its title
    assert picker.current is not None and "set up the redis cache" in picker.row_text(
        picker.current, 200)


def test_picker_shows_a_title_and_finds_the_session_by_it(tmp_path: Path) -> None:
    cfg = write_config(tmp_path / "rollchat.yml", FAST)
    sessions = _three(tmp_path)
    titled = "assistant_20260501_085500_d4d4"  # the oldest: not highlighted at first
    write_session(sessions, titled, ["help me with the cluster"], minutes=-5,
                  title="Kubernetes upgrade plan")

    def script(term: Terminal) -> None:
        term.expect_exact("4 of 4 sessions")
        # its row, numbered as 'rollchat sessions' numbers it
        term.expect_exact("4 2026-05-01 08:55  assistant_20260501_085500_d4d4    1q  "
                          "Kubernetes upgrade plan")
        term.expect_exact("No summary yet")  # the newest is highlighted first
        term.send("upgrade")  # a word only its title holds
        term.expect_exact("First: help me with")  # it is highlighted now (its preview)
        term.send("\r")
        term.expect_exact(f"Found: {titled}")
        term.expect_exact(PROMPT)
        term.sendline("exit")

    assert run_chat(tmp_path, ["--config", str(cfg), "pick"], script) == 0


# ------------------------------------------------------------------ a bare resume in the chat

def test_a_bare_resume_in_the_chat_opens_the_picker(tmp_path: Path) -> None:
    cfg = write_config(tmp_path / "rollchat.yml", FAST)
    sessions = _three(tmp_path)

    def script(term: Terminal) -> None:
        term.expect_exact(PROMPT)
        term.sendline("resume")
        term.expect_exact("3 of 3 sessions")  # the picker, over the saved sessions
        term.send("garden")
        term.expect_exact("tomatoes by the wall")
        term.send("\x1b")  # Esc: back to the chat, nothing resumed
        term.expect_exact("No session chosen.")
        term.expect_exact(PROMPT)
        term.sendline("/resume")
        term.expect_exact("3 of 3 sessions")
        term.send("garden")
        term.expect_exact("tomatoes by the wall")
        term.send("\r")
        term.expect_exact("Loading session...")
        term.expect_exact("Restoring context...")
        term.expect_exact(PROMPT)
        term.sendline("and now?")
        term.expect_exact("Tokens: ")
        term.expect_exact(PROMPT)
        term.sendline("exit")

    assert run_chat(tmp_path, ["--config", str(cfg)], script) == 0
    [new] = [p for p in sessions.glob("*.md") if p.stem not in (OLD, REDIS, NEWEST)]
    assert parse(new.read_text()).header.resumed_from == OLD


def test_a_bare_resume_in_a_piped_chat_is_a_usage_error(tmp_path: Path) -> None:
    cfg = write_config(tmp_path / "rollchat.yml", FAST)
    _three(tmp_path)
    result = run_piped(tmp_path, "resume\nexit\n", "--config", str(cfg))
    assert result.returncode == 0, result.stderr
    assert "usage: resume SESSION" in result.stdout + result.stderr
    assert "Loading session" not in result.stdout
    assert len(list(tmp_path.glob("sessions/*.md"))) == 3  # nothing resumed, nothing saved


def test_picker_rows_use_the_terminals_width_for_titles(tmp_path: Path) -> None:
    cfg = write_config(tmp_path / "rollchat.yml", FAST)
    sessions = _three(tmp_path)
    title = "Migrate the billing service from the old cluster to Kubernetes"  # 62 characters
    titled = "assistant_20260501_085500_d4d4"  # the oldest: not highlighted, no preview
    write_session(sessions, titled, ["help me with the cluster"], minutes=-5, title=title)

    def script(term: Terminal) -> None:  # a terminal of 120 columns
        term.expect_exact("4 of 4 sessions")
        # in full: 62 columns are left for it after the row's number, not 24 (its last letter
        # is in the last column, which prompt_toolkit draws after a cursor move)
        term.expect_exact(title[:-1], timeout=10)
        term.send("\x1b")

    assert run_chat(tmp_path, ["--config", str(cfg), "pick"], script) == 1
