"""Issue 35, smaller list: at 80 columns the toolbar and the picker keep a session's id whole
(``resume`` needs it): the toolbar leaves out the agent, the query count, then the model
first; a picker row leaves out its date (the id holds it) and ends a cut title in "…"."""

from __future__ import annotations

from pathlib import Path

from rollchat.storage.store import SessionStore
from rollchat.ui.picker import Picker
from rollchat.ui.repl import toolbar_text
from tests.compaction.test_autocompact import FakeProvider, build_app
from tests.sessions_helpers import summary, write_session

LONG_ID = "code-reviewer_20261207_010532_f608"
TITLE = "Migrating the billing service from MySQL to PostgreSQL 16 in three steps"


def test_the_toolbar_keeps_the_session_id_whole_at_80_columns(tmp_path: Path) -> None:
    built = build_app(tmp_path, FakeProvider())
    built.send("hello there")
    sid = built.session.state.session_id
    assert sid is not None
    wide = toolbar_text(built.app, 200)
    assert "· 1 query · Rollo · " in wide and wide.endswith(f"· {sid} ")
    for width in (80, 70):
        narrow = toolbar_text(built.app, width)
        assert narrow.endswith(f"· {sid} ") and len(narrow) <= width, narrow
        assert narrow.startswith(" context ")  # the gauge first, always


def test_a_picker_row_keeps_the_id_whole_at_80_columns(tmp_path: Path) -> None:
    sessions = tmp_path / "sessions"
    write_session(sessions, LONG_ID, ["plan the billing migration"], title=TITLE,
                  summary=summary(topics=("billing",)))
    [info] = SessionStore(sessions).list_sessions().sessions
    picker = Picker([info], SessionStore(sessions).load_summary)
    wide = picker.row_text(info, 200)
    assert "2026" in wide.split(LONG_ID)[0] and wide.endswith(TITLE)  # the date shown
    row = picker.row_text(info, 80)
    assert LONG_ID in row and len(row) == 80 and row.endswith("…")
    assert row.split(LONG_ID)[1].strip().startswith("1q  Migrating the billing service")
