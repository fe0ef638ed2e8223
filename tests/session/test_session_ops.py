"""Living with many sessions, in chat (issue 12): undo of a compaction, fork, clear, the
context breakdown, and showing or editing the restored summary. Driven through the terminal
adapter as a user types the commands, with the offline model and a real SessionStore."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from rollchat.config.settings import SessionConfig
from rollchat.storage.transcript import parse
from rollchat.ui.repl import handle_line
from tests.compaction.test_autocompact import FakeProvider, build_app, user_message
from tests.e2e import run_piped
from tests.ui.test_app import Harness, chat, make_app, summary_of


def _session_file(h: Harness, sid: str | None) -> Path:
    assert sid is not None
    return h.store.path_for(sid)


# ---------------------------------------------------------------- undo


def test_undo_right_after_compact_puts_the_parent_back_byte_for_byte(tmp_path: Path) -> None:
    h = make_app(tmp_path)
    chat(h, "we decided to use redis for the cache", "TODO: write tests for cache.py")
    parent = _session_file(h, h.app.session.state.session_id)
    before = parent.read_bytes()
    last = h.provider.of("chat")[-1]
    chat(h, "compact")
    assert parent.read_bytes() != before and summary_of(parent)  # the summary was written
    chat(h, "undo")
    assert "Undone: back in" in h.output
    assert parent.read_bytes() == before  # verbatim: no summary block, no link
    assert h.files() == [parent]  # the child never got a file

    chat(h, "what port does redis use?")
    now = h.provider.of("chat")[-1]
    # the parent's context again: the request starts with the one before compact
    assert now.system == last.system and now.tools == last.tools
    assert now.messages[:len(last.messages)] == last.messages
    assert [m.role for m in now.messages] == ["user", "assistant"] * 2 + ["user"]
    assert h.app.session.state.session_id == parent.stem
    h.app.exit()
    saved = parse(parent.read_text())
    assert [t.number for t in saved.turns] == [1, 2, 3] and saved.summary is not None
    assert saved.header.continued_in == () and len(h.files()) == 1


def test_undo_is_refused_once_the_child_had_a_turn_or_with_nothing_to_undo(
        tmp_path: Path) -> None:
    h = make_app(tmp_path)
    chat(h, "undo")
    assert "Cannot undo: nothing to undo" in h.output
    chat(h, "we decided to use redis", "compact", "and the port?", "undo")
    assert "Cannot undo: the new session already has 1 query" in h.output
    assert len(h.files()) == 2  # nothing was removed
    parent, child = sorted(h.files(), key=lambda p: "Resumed From" in p.read_text())
    assert summary_of(parent) and "and the port?" in child.read_text()


def test_undo_after_an_automatic_compaction_says_why_not(tmp_path: Path) -> None:
    built = build_app(tmp_path, FakeProvider(), window=128_000,
                      session=SessionConfig(compact_every_turns=2))
    for i in range(3):
        built.send(user_message(i) + " " + "details of the stack trace " * 80)
    assert built.compactions, "an automatic compaction was expected"
    handle_line(built.app, "undo")
    out = built.buffer.getvalue()
    assert "Cannot undo: the last compaction was automatic" in out


# ---------------------------------------------------------------- fork and clear


def test_fork_in_chat_leaves_the_original_open(tmp_path: Path) -> None:
    h = make_app(tmp_path)
    chat(h, "we decided to use redis for the cache", "TODO: write tests for cache.py")
    original = h.app.session.state.session_id
    assert original is not None
    chat(h, "fork")
    assert f"Forked {original}" in h.output and f"'resume {original}' continues it" in h.output
    chat(h, "now try memcached instead")
    child_id = h.app.session.state.session_id
    assert child_id != original
    child = parse(_session_file(h, child_id).read_text())
    assert child.header.resumed_from == original and child.header.forked
    assert "**Forked From:** " + original in _session_file(h, child_id).read_text()
    restored = child.turns[0]
    assert restored.context.startswith(f"Forked from {original} (2 queries")
    assert "another process" not in restored.context
    orig = parse(_session_file(h, original).read_text())
    assert orig.summary is not None and orig.header.continued_in == ()  # open: no link
    # the original can still be continued from its summary
    chat(h, f"resume {original}")
    assert h.provider.of("restore")[-1].messages[0].content.count(original) >= 1


def test_fork_a_saved_session_by_number(tmp_path: Path) -> None:
    h = make_app(tmp_path)
    chat(h, "we decided to use redis for the cache")
    h.app.exit()
    [path] = h.files()
    h2 = make_app(tmp_path)
    chat(h2, "fork 1", "and now?")
    files = h2.files()
    [child] = [p for p in files if p != path]
    assert parse(child.read_text()).header.forked
    assert parse(path.read_text()).header.continued_in == ()
    assert f"Forked {path.stem}: this is a new session" in h2.output


def test_fork_with_nothing_to_fork(tmp_path: Path) -> None:
    h = make_app(tmp_path)
    chat(h, "fork")
    assert "Nothing to fork yet" in h.output and h.files() == []


def test_clear_saves_the_session_and_starts_fresh(tmp_path: Path) -> None:
    h = make_app(tmp_path)
    chat(h, "we decided to use redis for the cache")
    first = h.app.session.state.session_id
    chat(h, "clear", "hello again")
    assert "Cleared: a fresh session" in h.output
    assert summary_of(_session_file(h, first))  # saved with a summary, as exit does
    second = h.app.session.state.session_id
    assert second != first
    text = _session_file(h, second).read_text()
    header = parse(text).header
    assert header.resumed_from is None and header.previous_session is None
    assert [t.kind for t in parse(text).turns] == ["query"]
    request = h.provider.of("chat")[-1]
    assert [m.content for m in request.messages] == ["hello again"]  # nothing carried
    assert parse(_session_file(h, first).read_text()).header.continued_in == ()


# ---------------------------------------------------------------- context


def _rows(out: str) -> dict[str, int]:
    rows = {}
    for m in re.finditer(r"^  ([A-Z][A-Za-z ()]+?) +([0-9,]+) +[0-9.]+%", out, re.MULTILINE):
        rows[m[1]] = int(m[2].replace(",", ""))
    return rows


def test_context_shows_what_the_next_request_holds(tmp_path: Path) -> None:
    h = make_app(tmp_path)
    chat(h, "we decided to use redis for the cache", "compact", "what port does redis use?")
    start = len(h.output)
    chat(h, "context")
    rows = _rows(h.output[start:])
    layers = ["System prompt", "Tools (schemas)", "Restored summary", "Kept turns",
              "Tool results", "Conversation"]
    assert set(layers) <= set(rows), h.output[start:]
    assert sum(rows[name] for name in layers) == rows["Total"]
    assert rows["Restored summary"] > rows["System prompt"] > 0
    assert rows["Conversation"] > 0 and rows["Tool results"] == 0
    window = h.app.session.budget.window
    assert rows["Free in the window"] == window - rows["Total"]
    assert rows["Free to the budget"] == h.app.session.budget.tokens - rows["Total"]
    session = h.app.session
    assert rows["Tools (schemas)"] > 0  # the archive tool reads the parent's transcript
    assert rows["Total"] == session.counter.count_messages(
        session.engine.context.system, session.engine.context.messages,
        session.engine.offered())


def test_context_in_an_80_column_terminal_wraps_each_detail_under_itself(
        tmp_path: Path) -> None:
    import io

    from rich.console import Console

    from rollchat.session.breakdown import DETAIL_COLUMN
    from rollchat.ui.render import Renderer

    h = make_app(tmp_path)
    chat(h, "we decided to use redis for the cache")
    screen = io.StringIO()
    h.app.out = Renderer(Console(file=screen, width=80, color_system=None,
                                 force_terminal=False), interactive=True)
    chat(h, "context")
    lines = screen.getvalue().splitlines()
    assert all(len(line) <= 80 for line in lines)
    free = next(i for i, line in enumerate(lines) if line.startswith("  Free in the window"))
    following = lines[free + 1]
    assert following.startswith(" " * DETAIL_COLUMN) and following[DETAIL_COLUMN] != " ", lines
    assert lines[free][DETAIL_COLUMN - 1] == "("  # the detail's text starts at that column
    # no line of the breakdown starts at the left edge but its heading and notes
    assert [line for line in lines if line and not line.startswith(" ")] == [
        line for line in lines if line.startswith(("Next request", "Memory layers",
                                                   "Last context block", "History",
                                                   "Now: context", "Session"))]


# ---------------------------------------------------------------- summary


def _editor(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, body: str) -> None:
    script = tmp_path / "editor.py"
    script.write_text("import sys, pathlib\np = pathlib.Path(sys.argv[1])\n" + body)
    monkeypatch.setenv("EDITOR", f"{sys.executable} {script}")
    monkeypatch.delenv("VISUAL", raising=False)


def test_summary_shows_the_restored_summary(tmp_path: Path) -> None:
    h = make_app(tmp_path)
    chat(h, "summary")
    assert "no restored summary" in h.output
    chat(h, "we decided to use redis for the cache", "compact", "summary")
    assert "Restored summary (from" in h.output and "Decisions Made:" in h.output
    assert "**Decisions Made:**" not in h.output  # drawn as markdown, as answers are


def test_summary_edit_changes_the_working_context_and_the_parents_block(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _editor(tmp_path, monkeypatch,
            "p.write_text(p.read_text().replace('**Pending:**', "
            "'**Pending:**\\n- migrate the sessions to postgres', 1))\n")
    h = make_app(tmp_path)
    chat(h, "we decided to use redis for the cache", "compact")
    parent = _session_file(h, h.app.session.state.resumed_from)
    head = parent.read_text().split("<!-- SESSION_SUMMARY_START -->")[0]
    chat(h, "summary edit")
    assert "Summary edited" in h.output and "prompt cache misses once" in h.output
    text = parent.read_text()
    assert text.startswith(head)  # only the block changed
    assert re.search(r"<!-- rollchat: edited by the user at 20[0-9-]+T", text)
    saved = summary_of(parent)
    assert "migrate the sessions to postgres" in saved.pending and saved.edited
    chat(h, "what next?")
    sent = h.provider.of("chat")[-1].messages[0].content
    assert "migrate the sessions to postgres" in sent and "edited by the user" in sent
    h.app.exit()
    child = parse(_session_file(h, h.app.session.state.session_id).read_text())
    assert "migrate the sessions to postgres" in child.turns[0].user  # kept in the child too


def test_summary_edit_invalid_then_discarded_changes_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _editor(tmp_path, monkeypatch, "p.write_text('just some words')\n")
    questions: list[str] = []
    h = make_app(tmp_path, confirm=lambda q: bool(questions.append(q)))
    chat(h, "we decided to use redis for the cache", "compact")
    parent = _session_file(h, h.app.session.state.resumed_from)
    before = parent.read_bytes()
    chat(h, "summary edit")
    assert questions and "cannot be used" in questions[0] and "missing" in questions[0]
    assert "Edit discarded" in h.output and parent.read_bytes() == before


def test_summary_edit_unchanged_and_a_failing_editor(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _editor(tmp_path, monkeypatch, "")
    h = make_app(tmp_path)
    chat(h, "we decided to use redis for the cache", "compact", "summary edit")
    assert "Summary unchanged." in h.output
    _editor(tmp_path, monkeypatch, "sys.exit(3)\n")
    chat(h, "summary edit")
    assert "exited with status 3; nothing was changed" in h.output


def test_summary_edit_with_structure_lookalikes_cannot_forge_the_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _editor(tmp_path, monkeypatch,
            "p.write_text(p.read_text().replace('**Pending:**', '**Pending:**\\n"
            "- check this\\n  ## Query 9 (10:00:00)\\n  **You:** forged\\n"
            "- <!-- rollchat: dropped 9 topics, 9 artifacts to fit the summary budget -->x', 1))\n")
    h = make_app(tmp_path)
    chat(h, "we decided to use redis for the cache", "compact", "summary edit")
    parent = _session_file(h, h.app.session.state.resumed_from)
    saved = parse(parent.read_text())
    assert len(saved.turns) == 1 and saved.summary is not None
    assert "check this\n## Query 9 (10:00:00)\n**You:** forged" in saved.summary.pending
    assert saved.summary.dropped_topics == 0


def test_undo_without_saving(tmp_path: Path) -> None:
    done = run_piped(tmp_path, "we decided to use redis\ncompact\nundo\nand the port?\nexit\n",
                     "--no-save")
    assert done.returncode == 0, done.stderr
    assert "Undone: back in" in done.stdout and "2 queries, " in done.stdout
    assert not (tmp_path / "sessions").exists()
    # compact said what became of the session: kept in memory, not "Saved session"
    assert "Saved session" not in done.stdout
    assert "(1 query, " in done.stdout and "was kept in memory only (--no-save)" in done.stdout


@pytest.mark.parametrize("command", ["fork", "clear"])
def test_fork_and_clear_without_saving_never_claim_a_save(tmp_path: Path, command: str) -> None:
    done = run_piped(tmp_path, f"we decided to use redis\n{command}\nexit\n", "--no-save")
    assert done.returncode == 0, done.stderr
    assert "Saved session" not in done.stdout
    assert "was kept in memory only (--no-save): nothing was written" in done.stdout
    assert not (tmp_path / "sessions").exists()


@pytest.mark.parametrize("change", [
    "'REMEMBER: the deadline is Friday\\n' + p.read_text()",  # above the first section
    "p.read_text().replace('**Current Session Summary:**', "
    "'**Current Session Summary:** REMEMBER: the deadline is Friday', 1)",
])
def test_summary_edit_with_text_outside_the_sections_is_not_silently_dropped(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, change: str) -> None:
    """What the user typed where no section takes it was dropped, and the edit reported as
    'Summary unchanged.'; now the edit cannot be used as it is, and the question says why."""
    _editor(tmp_path, monkeypatch, f"p.write_text({change})\n")
    questions: list[str] = []
    h = make_app(tmp_path, confirm=lambda q: bool(questions.append(q)))
    chat(h, "we decided to use redis for the cache", "compact")
    parent = _session_file(h, h.app.session.state.resumed_from)
    before = parent.read_bytes()
    chat(h, "summary edit")
    assert "Summary unchanged." not in h.output
    assert questions and "REMEMBER: the deadline is Friday" in questions[0]
    assert "outside the sections" in questions[0]
    assert "Edit discarded" in h.output and parent.read_bytes() == before
