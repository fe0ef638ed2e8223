"""Issue 36 items 1 and 3: a session's state is set by its owner only: no module assigns a field
of another object's ``state`` (``session.state.save_failed = ...`` after construction); the
Session is one class, not a base class kept to stay under a line count; the UI asks the Session,
never the engine."""

from __future__ import annotations

import re
from pathlib import Path

from rollchat.session.core import Session

SRC = Path(__file__).resolve().parents[2] / "src" / "rollchat"
# ``x.state.field =`` (or +=, -=) where x is not ``self``
_FROM_OUTSIDE = re.compile(r"\b(?!self\b)\w+\.state\.\w+\s*(?:[+-]?=)(?!=)")


def test_no_module_sets_a_field_of_another_objects_state() -> None:
    found = [f"{path.relative_to(SRC)}:{n}: {line.strip()}"
             for path in sorted(SRC.rglob("*.py"))
             for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             if _FROM_OUTSIDE.search(line)]
    assert found == []


def test_the_session_has_no_base_class_of_its_own() -> None:
    assert Session.__bases__ == (object,)


def test_the_ui_never_touches_the_engine() -> None:
    touching = [f"{path.relative_to(SRC)}:{n}: {line.strip()}"
                for path in sorted((SRC / "ui").rglob("*.py"))
                for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
                if re.search(r"\.engine\b|rollchat\.engine\b|import engine\b", line)]
    assert touching == []
