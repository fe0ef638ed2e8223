"""compact and resume end to end with the offline model: as in a terminal, with piped
input, ``rollchat sessions [--json]`` and ``rollchat --resume N|ID`` followed by piped lines."""

from __future__ import annotations

import json
from pathlib import Path

from rollchat.domain import Transcript
from rollchat.storage.transcript import SUMMARY_END, SUMMARY_START, parse
from tests.e2e import PROMPT, run_piped, write_config
from tests.terminal import Terminal, run_chat

FAST = "ui:\n  offline_word_delay: 0\n"
TWO_AGENTS = FAST + """\
agents:
  assistant:
    name: Assistant
    provider: offline
  coder:
    name: Coder
    provider: offline
"""


def _sessions(cwd: Path) -> dict[str, Transcript]:
    return {p.stem: parse(p.read_text()) for p in sorted((cwd / "sessions").glob("*.md"))}


ANSWER = ("Time: ", "Tokens: ")  # the footer that ends an answer


def _see(term: Terminal, *texts: str) -> None:
    for text in texts:
        term.expect_exact(text)


def _say(term: Terminal, line: str, *expect: str) -> None:
    term.sendline(line)
    _see(term, *expect)
    term.expect_exact(PROMPT)


def _check_pair(found: dict[str, Transcript]) -> tuple[Transcript, Transcript]:
    """The parent (3 queries) and its compacted child (1 query), checked; returned."""
    assert len(found) == 2
    [child] = [t for t in found.values() if t.header.resumed_from is not None]
    parent = found[str(child.header.resumed_from)]
    assert parent.header.resumed_from is None and parent.header.previous_session is None
    assert child.header.previous_session == f"{parent.header.session_id}.md"  # relative
    assert parent.header.total_queries == 3 == len(parent.turns)
    # billed: the turns and the summary call (its tokens are in no turn)
    assert parent.header.total_tokens > sum(t.usage.total for t in parent.turns) > 0
    assert [t.kind for t in child.turns] == ["restored", "query"]
    assert child.header.total_queries == 1
    assert child.header.total_tokens > sum(t.usage.total for t in child.turns)  # + summary
    restored = child.turns[0]
    assert restored.previous_session == f"{parent.header.session_id}.md"
    assert restored.context.startswith(f"Resumed from {parent.header.session_id} (3 queries")
    assert "I've reviewed the summary" in restored.assistant and restored.usage.total > 0
    assert parent.summary is not None and child.summary is not None
    assert parent.summary.background == "Initial session." and not parent.summary.fallback
    assert child.summary.background != "Initial session."
    return parent, child


def test_compact_then_resume_in_a_terminal(tmp_path: Path) -> None:
    """The chat as a terminal runs it (in process, tests/terminal.py): compact, then in a
    second chat resume the compacted parent, which offers its continuation first."""
    cfg = str(write_config(tmp_path / "rollchat.yml", FAST))

    def compacting(term: Terminal) -> None:
        term.expect_exact(PROMPT)
        _say(term, "we decided to use redis for caching", *ANSWER)
        _say(term, "TODO: write the eviction tests", *ANSWER)
        _say(term, "which port should redis listen on?", *ANSWER)
        _say(term, "compact", "Generating session summary...", "Saved session: ",
             "(3 queries,", "Starting new session with summary...",
             "I've reviewed the summary", *ANSWER)
        _say(term, "what about the eviction tests?", *ANSWER)
        term.sendline("exit")
        _see(term, "Generating session summary", "Saved session: ", "1 query, ",
             "tokens billed (", "for the queries, ", "restoring the context, ",
             "for summaries, ", "for memory)", "Goodbye!")

    assert run_chat(tmp_path, ["--config", cfg], compacting) == 0
    parent, kid = _check_pair(_sessions(tmp_path))
    for path in (tmp_path / "sessions").glob("*.md"):
        text = path.read_text()  # one block (the child's restoration prompt quotes its
        # parent's, escaped: a content line, never a marker)
        assert text.split("\n").count(SUMMARY_START) == 1
        assert text.rstrip().endswith(SUMMARY_END)

    def resuming(term: Terminal) -> None:
        term.expect_exact(PROMPT)
        _say(term, "sessions", kid.header.session_id, parent.header.session_id)
        # the parent was continued in the kid: resuming it offers the kid; "n" branches off
        term.sendline("resume 2")
        term.expect_exact("Resume 1 instead? [Y/n, Enter]:")
        asked = " ".join(term.before.split())
        assert f"({parent.header.session_id}) was continued in session 1 " \
               f"({kid.header.session_id}," in asked
        _say(term, "n", "Loading session...", "Restoring context...",
             "I've reviewed the summary", *ANSWER)
        term.sendline("exit")
        _see(term, "0 queries, ", "tokens billed (", "restoring the context)", "Goodbye!")

    assert run_chat(tmp_path, ["--config", cfg], resuming) == 0
    assert set(_sessions(tmp_path)) == {parent.header.session_id, kid.header.session_id}


def test_piped_compact_then_resume_with_the_flag(tmp_path: Path) -> None:
    cfg = str(write_config(tmp_path / "rollchat.yml", FAST))
    first = run_piped(tmp_path, "we will ship on monday\nTODO: changelog\nhow big is it?\n"
                      "compact keep the release date\nand the changelog?\nexit\n",
                      "--config", cfg)
    assert first.returncode == 0, first.stderr
    out = first.stdout
    steps = ["Generating session summary...", "Saved session: ", "Starting new session with "
             "summary...", "I've reviewed", "and the changelog?", "Goodbye!"]
    positions = [out.find(s) for s in steps]
    assert -1 not in positions and positions == sorted(positions), out
    parent, kid = _check_pair(_sessions(tmp_path))

    listing = run_piped(tmp_path, "", "sessions", "--json", "--config", cfg)
    assert listing.returncode == 0, listing.stderr
    data = json.loads(listing.stdout)
    assert [s["number"] for s in data["sessions"]] == [1, 2]
    assert [s["id"] for s in data["sessions"]] == [kid.header.session_id,
                                                   parent.header.session_id]
    newest = data["sessions"][0]
    assert newest["parent"] == parent.header.session_id and newest["has_summary"] is True
    assert newest["queries"] == 1 and newest["first_query"] == "and the changelog?"
    assert newest["file"] == f"{kid.header.session_id}.md" and data["problems"] == []
    assert data["sessions"][1]["first_query"] == "we will ship on monday"
    table = run_piped(tmp_path, "", "sessions", "--config", cfg)
    assert table.returncode == 0
    assert table.stdout.index(kid.header.session_id) < table.stdout.index(
        parent.header.session_id)

    resumed = run_piped(tmp_path, "what was the date?\nexit\n", "--config", cfg,
                        "--resume", parent.header.session_id[:-1])
    assert resumed.returncode == 0, resumed.stderr
    assert "I've reviewed" in resumed.stdout and "restoring the context, " in resumed.stdout
    # the parent was continued in the kid already: without a terminal its chain's newest,
    # the kid, is resumed, and it says so (resuming the parent would branch off silently)
    assert f"Resuming session 1 ({kid.header.session_id}), the newest of the chain" in \
        " ".join(resumed.stdout.split())
    found = _sessions(tmp_path)
    [third] = [t for t in found.values() if t.header.session_id not in
               (parent.header.session_id, kid.header.session_id)]
    assert third.header.resumed_from == kid.header.session_id
    assert third.header.previous_session == f"{kid.header.session_id}.md"
    assert [t.kind for t in third.turns] == ["restored", "query"]

    bad = run_piped(tmp_path, "exit\n", "--config", cfg, "--resume", "9")
    assert bad.returncode != 0 and "no session number 9: choose between 1 and 3" in bad.stderr
    assert "Traceback" not in bad.stderr
    escape = run_piped(tmp_path, "exit\n", "--config", cfg, "--resume", "../x")
    assert escape.returncode != 0 and "invalid session id: '../x'" in escape.stderr


def test_another_agent_is_refused_without_a_terminal_unless_yes(tmp_path: Path) -> None:
    cfg = str(write_config(tmp_path / "rollchat.yml", TWO_AGENTS))
    made = run_piped(tmp_path, "coder talk about the lexer\nexit\n", "--config", cfg,
                     "--agent", "coder")
    assert made.returncode == 0, made.stderr
    [coder_id] = _sessions(tmp_path)
    refused = run_piped(tmp_path, "resume 1\nexit\n", "--config", cfg)
    refused.stdout = " ".join(refused.stdout.split())  # piped output wraps at 80 columns
    assert "was with agent 'Coder', not 'Assistant'." in refused.stdout
    assert "Refused without a terminal; pass --yes" in refused.stdout
    assert "Resume cancelled." in refused.stdout and "I've reviewed" not in refused.stdout
    accepted = run_piped(tmp_path, "resume 1\nnext?\nexit\n", "--config", cfg, "--yes")
    assert "I've reviewed" in accepted.stdout, accepted.stdout
    [new] = [t for sid, t in _sessions(tmp_path).items() if sid != coder_id]
    assert new.header.resumed_from == coder_id and new.header.agent == "Assistant"


def test_no_queries_leaves_no_file_and_compact_says_so(tmp_path: Path) -> None:
    cfg = str(write_config(tmp_path / "rollchat.yml", FAST))
    done = run_piped(tmp_path, "compact\nsessions\nexit\n", "--config", cfg)
    assert done.returncode == 0
    assert "Nothing to compact" in done.stdout and "No saved sessions." in done.stdout
    assert not list((tmp_path / "sessions").glob("*.md"))
    assert "Saved session" not in done.stdout
