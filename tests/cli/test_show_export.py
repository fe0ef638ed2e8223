"""``rollchat show N|ID`` (rich, through the pager in a terminal, plain when piped) and
``rollchat export N|ID [--chain] [--format md|json]`` (one document; with --chain the whole
lineage, oldest first), with hostile text, broken chains and bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pexpect
from typer.testing import CliRunner

from rollchat.cli.app import build_cli
from rollchat.storage.transcript import parse
from tests.e2e import clean_env, run_piped, spawn
from tests.sessions_helpers import summary, write_session

ROOT = "assistant_20260501_090000_a1a1"
MIDDLE = "assistant_20260501_091000_b2b2"
LEAF = "assistant_20260501_092000_c3c3"
HOSTILE = "look \x1b]0;pwned\x07 here \x1b[2J and \u202eevil"


def _chain(tmp_path: Path) -> Path:
    """ROOT -> MIDDLE (resumed) -> LEAF (forked); MIDDLE's answer and summary are hostile."""
    sessions = tmp_path / "sessions"
    write_session(sessions, ROOT, ["plan the garden beds"], minutes=0,
                  summary=summary(topics=("garden layout",), decisions=("tomatoes by the wall",)))
    write_session(sessions, MIDDLE, ["set up the **redis** cache", "which port?"], minutes=10,
                  parent=ROOT, answer=f"Use `6380`. {HOSTILE}",
                  summary=summary(background="A garden, then redis.", topics=("redis caching",),
                                  decisions=("redis listens on port 6380",),
                                  pending=(f"write the eviction tests {HOSTILE}",)))
    write_session(sessions, LEAF, ["draft the release notes"], minutes=20, parent=MIDDLE,
                  forked=True)
    return sessions


def _cli(tmp_path: Path, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(build_cli(), [*args, "--sessions-dir", str(tmp_path / "sessions")])
    return result.exit_code, result.stdout, result.stderr


def _made_harmless(text: str) -> None:
    assert "\x1b]0;" not in text and "\x07" not in text and "\x1b[2J" not in text
    assert "\u202e" not in text
    assert "^[]0;pwned^G" in text and "^[[2J" in text and "<U+202E>" in text


# ------------------------------------------------------------------ show

def test_show_piped_is_plain_readable_text(tmp_path: Path) -> None:
    _chain(tmp_path)
    result = run_piped(tmp_path, "", "show", "b2b2", "--sessions-dir", "sessions")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "\x1b[" not in out.replace("^[[2J", "")  # no styling codes when piped
    for text in (f"Assistant conversation · {MIDDLE}", f"Resumed from   {ROOT}",
                 "Query 2 · 2026-05-01 09:10:02", "You: which port?", "Assistant:",
                 "Use 6380.", "Summary", "Background", "A garden, then redis.",
                 "Decisions made", "• redis listens on port 6380", "Pending",
                 "Files and artifacts", "Time: 0.5s | Tokens: 25 (in: 20, out: 5)"):
        assert text in out, text
    assert "SESSION_SUMMARY" not in out and "<!--" not in out and "**You:**" not in out
    assert "You: set up the **redis** cache" in out  # what the user typed, as typed
    _made_harmless(out)


def test_show_accepts_numbers_and_id_prefixes_and_names_forks(tmp_path: Path) -> None:
    _chain(tmp_path)
    code, out, _ = _cli(tmp_path, "show", "1")
    assert code == 0 and f"conversation · {LEAF}" in out
    assert any(line.startswith("Forked from") and line.endswith(MIDDLE)
               for line in out.splitlines())
    code, out, _ = _cli(tmp_path, "show", "assistant_20260501_09000")
    assert code == 0 and f"conversation · {ROOT}" in out
    assert "No summary" not in out and "• tomatoes by the wall" in out


def test_show_unknown_or_ambiguous_session_exits_1_with_the_reason(tmp_path: Path) -> None:
    _chain(tmp_path)
    code, out, err = _cli(tmp_path, "show", "zzzz")
    assert code == 1 and out == "" and "no session 'zzzz'" in err
    code, _, err = _cli(tmp_path, "show", "assistant_2026")
    assert code == 1 and "ambiguous session id" in err
    code, _, err = _cli(tmp_path, "show", "../etc/passwd")
    assert code == 1 and "invalid session id" in err


def test_show_in_a_terminal_goes_through_the_pager(tmp_path: Path) -> None:
    _chain(tmp_path)
    paged = tmp_path / "paged.txt"
    env = clean_env(tmp_path / "home", PAGER=f"cat > {paged}")
    child = spawn(tmp_path, "show", MIDDLE, "--sessions-dir", "sessions", env=env)
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    text = paged.read_text(encoding="utf-8")
    assert "\x1b[1m" in text  # styled: the pager was given colours
    assert "redis listens on port 6380" in text and "which port?" in text
    assert "SESSION_SUMMARY" not in text
    _made_harmless(text)


# ------------------------------------------------------------------ export

def test_export_md_prints_the_file_exactly(tmp_path: Path) -> None:
    sessions = _chain(tmp_path)
    code, out, _ = _cli(tmp_path, "export", "b2b2")
    assert code == 0 and out == (sessions / f"{MIDDLE}.md").read_text(encoding="utf-8")


def test_export_piped_ends_with_exactly_one_newline(tmp_path: Path) -> None:
    sessions = _chain(tmp_path)
    middle, leaf = sessions / f"{MIDDLE}.md", sessions / f"{LEAF}.md"
    kept = middle.read_text(encoding="utf-8").rstrip("\n")
    middle.write_text(kept, encoding="utf-8")  # saved by an editor that adds no newline
    leaf.write_text(leaf.read_text(encoding="utf-8") + "\n\n", encoding="utf-8")  # or blanks
    for args in ((MIDDLE,), (LEAF,), (LEAF, "--chain"), (MIDDLE, "--format", "json"),
                 (LEAF, "--chain", "--format", "json")):
        done = run_piped(tmp_path, "", "export", *args, "--sessions-dir", "sessions")
        assert done.returncode == 0, done.stderr
        assert done.stdout.endswith("\n") and not done.stdout.endswith("\n\n"), args
    done = run_piped(tmp_path, "", "export", MIDDLE, "--sessions-dir", "sessions")
    assert done.stdout == kept + "\n"  # the file's text, with its one final newline
    done = run_piped(tmp_path, "", "export", LEAF, "--sessions-dir", "sessions")
    assert parse(done.stdout) == parse(leaf.read_text(encoding="utf-8"))  # the same session
    chained = run_piped(tmp_path, "", "export", LEAF, "--chain", "--sessions-dir", "sessions")
    assert f"{kept}\n\n<!-- rollchat export: session 3 of 3" in chained.stdout


def test_export_chain_md_is_every_file_of_the_lineage_oldest_first(tmp_path: Path) -> None:
    sessions = _chain(tmp_path)
    code, out, err = _cli(tmp_path, "export", "1", "--chain")
    assert code == 0 and err == ""
    expected = "\n".join(
        f"<!-- rollchat export: session {n} of 3: {sid}.md -->\n\n"
        + (sessions / f"{sid}.md").read_text(encoding="utf-8").rstrip("\n") + "\n"
        for n, sid in enumerate((ROOT, MIDDLE, LEAF), 1))
    assert out == expected


def test_export_chain_json_is_structured_oldest_first(tmp_path: Path) -> None:
    _chain(tmp_path)
    code, out, _ = _cli(tmp_path, "export", LEAF, "--chain", "--format", "json")
    assert code == 0
    doc = json.loads(out)
    assert doc["broken"] is None
    assert [s["session"]["id"] for s in doc["sessions"]] == [ROOT, MIDDLE, LEAF]
    middle = doc["sessions"][1]
    assert middle["session"]["parent"] == ROOT and doc["sessions"][2]["session"]["forked"]
    second = middle["turns"][1]
    assert second["number"] == 2 and second["tokens"] == {
        "input": 20, "output": 5, "cache_read": 0, "cache_write": 0, "total": 25}
    assert [m["role"] for m in second["messages"]] == ["user", "assistant"]
    assert second["messages"][0]["text"] == "which port?"
    assert second["messages"][1]["text"] == f"Use `6380`. {HOSTILE} (2)"  # exact when piped
    assert middle["summary"]["decisions"] == ["redis listens on port 6380"]
    assert doc["sessions"][2]["summary"] is None


def test_export_json_of_one_session_is_the_session_itself(tmp_path: Path) -> None:
    _chain(tmp_path)
    code, out, _ = _cli(tmp_path, "export", ROOT, "--format", "json")
    doc = json.loads(out)
    assert code == 0 and doc["session"]["id"] == ROOT and len(doc["turns"]) == 1
    assert doc["summary"]["topics"] == ["garden layout"]


def test_export_chain_with_a_missing_ancestor_exports_the_rest_and_says_so(
        tmp_path: Path) -> None:
    sessions = _chain(tmp_path)
    (sessions / f"{ROOT}.md").unlink()
    code, out, err = _cli(tmp_path, "export", LEAF, "--chain", "--format", "json")
    assert code == 0
    assert "rollchat: warning: the chain is broken" in err and ROOT in err
    doc = json.loads(out)
    assert [s["session"]["id"] for s in doc["sessions"]] == [MIDDLE, LEAF]
    assert ROOT in doc["broken"]
    code, out, _ = _cli(tmp_path, "export", LEAF, "--chain")
    assert out.startswith("<!-- rollchat export: the chain is broken:")
    assert "session 1 of 2: " + MIDDLE in out


def test_export_chain_stops_at_a_cycle_and_at_a_corrupt_parent(tmp_path: Path) -> None:
    sessions = tmp_path / "sessions"
    write_session(sessions, ROOT, ["one"], parent=MIDDLE)  # each names the other as parent
    write_session(sessions, MIDDLE, ["two"], minutes=5, parent=ROOT)
    code, out, err = _cli(tmp_path, "export", MIDDLE, "--chain", "--format", "json")
    assert code == 0 and "a cycle" in err
    assert [s["session"]["id"] for s in json.loads(out)["sessions"]] == [ROOT, MIDDLE]
    (sessions / f"{ROOT}.md").write_bytes(b"\xff\xfe not a session \x00")
    code, out, err = _cli(tmp_path, "export", MIDDLE, "--chain")
    assert code == 0 and "cannot be read" in err and "session 1 of 1" in out


def test_export_bad_input_is_refused_with_the_reason(tmp_path: Path) -> None:
    sessions = _chain(tmp_path)
    code, _, err = _cli(tmp_path, "export", ROOT, "--format", "xml")
    assert code == 2 and "'xml' is not one of 'md', 'json'" in err
    (sessions / "assistant_20260501_093000_dddd.md").write_text("# not\x1b[31m a session\n")
    code, out, err = _cli(tmp_path, "export", "dddd")
    assert code == 1 and out == "" and "cannot be used" in err and "\x1b" not in err


def test_show_says_when_a_summary_block_is_corrupted(tmp_path: Path) -> None:
    sessions = _chain(tmp_path)
    path = sessions / f"{ROOT}.md"
    path.write_text(path.read_text().replace("<!-- SESSION_SUMMARY_END -->", ""))
    code, out, _ = _cli(tmp_path, "show", ROOT)
    assert code == 0 and "You: plan the garden beds" in out
    assert "summary block is corrupted" in out and "tomatoes" not in out


def test_export_to_a_terminal_makes_escape_sequences_harmless(tmp_path: Path) -> None:
    _chain(tmp_path)
    child = spawn(tmp_path, "export", MIDDLE, "--sessions-dir", "sessions")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    _made_harmless(child.before or "")


def test_show_piped_keeps_every_word_of_long_items_answers_and_summaries(
        tmp_path: Path) -> None:
    """Piped, nothing is cut at the width: long list items, quotes and code lines of an answer
    and long summary items all arrive whole (they were cropped to one 80-column line)."""
    words = " ".join(f"w{n}" for n in range(60))
    sessions = tmp_path / "sessions"
    write_session(sessions, ROOT, [words], minutes=0,
                  answer=f"Para {words}\n\n- item {words}\n\n> quote {words}\n\n"
                         f"```\ncode {words}\n```\n",
                  summary=summary(background=f"bg {words}", topics=(f"topic {words}",),
                                  decisions=(f"decision {words}",)))
    result = run_piped(tmp_path, "", "show", "1", "--sessions-dir", "sessions")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    for lead in ("Para", "item", "quote", "code", "bg", "topic", "decision"):
        at = out.index(f"{lead} w0")
        following = out[at:at + 2000]
        assert all(f"w{n}" in following.split() for n in range(60)), (lead, following)


def test_sessions_tells_a_fork_from_a_continuation(tmp_path: Path) -> None:
    _chain(tmp_path)
    code, out, err = _cli(tmp_path, "sessions")
    assert code == 0, err
    assert f"forked from: {MIDDLE}" in out  # LEAF was forked off MIDDLE
    assert f"parent: {ROOT}" in out and f"forked from: {ROOT}" not in out  # MIDDLE resumed it
