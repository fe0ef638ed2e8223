"""Issue 25, point 2: one numbering. A session has the same number in ``rollchat sessions``,
``rollchat search``, ``rollchat --resume N`` and, in a chat, ``sessions``, ``search`` and
``resume N``; a chat's current session is listed with its number and marked, never left out
(which renumbered the rest); resuming it says so; resuming a session continued elsewhere
offers (without a terminal: takes) the newest of its chain. Real runs, piped."""

from __future__ import annotations

import json
import math
import re
import time
from pathlib import Path

from rollchat.storage.transcript import parse, parse_head
from tests.e2e import run_piped, write_config

FAST = "ui:\n  offline_word_delay: 0\n"


def _chat(tmp_path: Path, cfg: Path, text: str, *args: str) -> str:
    done = run_piped(tmp_path, text, "--config", str(cfg), *args)
    assert done.returncode == 0, done.stderr
    _past_the_newest_start(tmp_path)
    return done.stdout + done.stderr


def _past_the_newest_start(tmp_path: Path) -> None:
    """Wait until the clock is past the second the newest session started in (THE order is by
    start time, in whole seconds): a later chat's session is then later in it, however loaded
    the machine. Mostly no wait at all: a run takes longer than that under load."""
    dates = [parse_head((tmp_path / "sessions" / f"{i}.md").read_text()).header.date
             for i in _ids(tmp_path)]
    if dates:
        time.sleep(max(0.0, math.floor(max(dates).timestamp()) + 1 - time.time()))


def _numbers(tmp_path: Path, cfg: Path, *command: str) -> dict[str, int]:
    done = run_piped(tmp_path, "", "--config", str(cfg), *command, "--json")
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    rows = found["sessions"] if isinstance(found, dict) else found
    return {row["id"]: row["number"] for row in rows}


def _ids(tmp_path: Path) -> set[str]:
    return {p.stem for p in (tmp_path / "sessions").glob("*.md")}


def _listed(output: str) -> dict[int, str]:
    """The in-chat 'sessions' rows: number -> the rest of the head line."""
    return {int(m[1]): m[2] for m in re.finditer(r"^\s+(\d+)\. (\S+ · .*)$", output, re.M)}


def test_the_same_numbers_in_the_chat_and_on_the_command_line(tmp_path: Path) -> None:
    cfg = write_config(tmp_path / "rollchat.yml", FAST)
    _chat(tmp_path, cfg, "We chose postgres for the billing service.\nexit\n")
    [billing] = _ids(tmp_path)
    _chat(tmp_path, cfg, "The cache uses redis with a short TTL.\nexit\n")
    [cache] = _ids(tmp_path) - {billing}
    assert _numbers(tmp_path, cfg, "sessions") == {cache: 1, billing: 2}
    assert _numbers(tmp_path, cfg, "search", "postgres") == {billing: 2}

    # in a chat: its own session (the newest once its first message is saved) is number 1,
    # marked, and the others keep the numbers the command line gives them at that moment
    said = _chat(tmp_path, cfg, "Which postgres version did we pick?\nsessions\n"
                                "search postgres\nresume 1\nresume 3\n"
                                "What did we decide?\nexit\n")
    [current] = {i for i in _ids(tmp_path) - {billing, cache}
                 if parse((tmp_path / "sessions" / f"{i}.md").read_text()).header.resumed_from
                 is None}
    listed = _listed(said.split("You: sessions")[1].split("You: search")[0])
    assert [row.split(" · ")[0] for row in listed.values()] == [current, cache, billing]
    assert list(listed) == [1, 2, 3]
    assert listed[1].endswith("* current") and "current" not in listed[2] + listed[3]
    found = said.split("You: search postgres")[1].split("You: resume 1")[0]
    assert re.search(rf"^\s+3\. {billing} · ", found, re.M)  # the number 'sessions' gave it
    assert re.search(rf"^\s+1\. {current} · .*\* current$", found, re.M)
    assert "'resume N' continues one of them" in found
    assert f"session 1 ({current}) is the current session: you are in it already" in said
    assert f"Found: {billing}" in said and "no session number" not in said

    # after the chat, on the command line: the child made by 'resume 3' is the newest
    [child] = _ids(tmp_path) - {billing, cache, current}
    numbers = _numbers(tmp_path, cfg, "sessions")
    assert numbers == {child: 1, current: 2, cache: 3, billing: 4}
    assert _numbers(tmp_path, cfg, "search", "postgres")[billing] == 4

    # billing was continued in child: resuming it by its number (4) takes the chain's
    # newest without a terminal, and says so and how to branch off billing itself
    said = _chat(tmp_path, cfg, "And the cache?\nexit\n", "--resume", "4")
    assert (f"Session 4 ({billing}) was continued in session 1 ({child}, " in said
            and "Yes (the default without a terminal)." in said)
    assert f"Resuming session 1 ({child}), the newest of the chain ('fork 4' branches" in said
    assert f"Found: {child}" in said and f"Found: {billing}" not in said


def test_resuming_the_session_continued_by_the_current_one_resumes_nothing(
        tmp_path: Path) -> None:
    cfg = write_config(tmp_path / "rollchat.yml", FAST)
    _chat(tmp_path, cfg, "We chose postgres for the billing service.\nexit\n")
    [billing] = _ids(tmp_path)
    said = _chat(tmp_path, cfg, "Go on.\nresume 2\n", "--resume", "1")
    assert f"Found: {billing}" in said
    assert f"Session 2 ({billing}) was continued in the current session: nothing to " \
           "resume." in said
    assert said.count("Found:") == 1


def test_continue_prefers_the_agents_own_newest_session(tmp_path: Path) -> None:
    cfg = write_config(tmp_path / "rollchat.yml", FAST + (
        "default_agent: one\nagents:\n  one:\n    provider: offline\n"
        "  two:\n    provider: offline\n"))
    _chat(tmp_path, cfg, "One's question about postgres.\nexit\n")
    [ones] = _ids(tmp_path)
    _chat(tmp_path, cfg, "Two's question about redis.\nexit\n", "--agent", "two")
    said = _chat(tmp_path, cfg, "Go on.\nexit\n", "-c")
    assert f"Found: {ones}" in said and "Continue?" not in said and "Refused" not in said
