"""A saved prompt's turn keeps what was typed (``/NAME args``) beside the prompt, in the turn on
disk while its tools run (a crash keeps it) and in the finished turn."""

from __future__ import annotations

from collections.abc import Mapping

from rollchat.providers.base import ToolSpec
from rollchat.storage.transcript import parse
from rollchat.tools import Tool
from tests.drive import drain
from tests.engine.test_tool_loop import TwoCalls
from tests.session.test_session import make


def test_the_typed_command_is_on_disk_during_and_after_the_turn() -> None:
    core, store, _ = make()
    core.engine.provider = TwoCalls()
    seen: list[str] = []

    def second(arguments: Mapping[str, object]) -> str:
        [info] = store.list_sessions().sessions
        seen.append(store._text(info.session_id))
        return "second-result"

    core.engine.tools = {"first": Tool(ToolSpec("first", "", {}), lambda a: "first-result"),
                         "second": Tool(ToolSpec("second", "", {}), second)}
    drain(core.turn("Review a.py for bugs.", typed="/review a.py"))
    [pending] = parse(seen[0]).turns
    assert (pending.status, pending.user, pending.typed) == (
        "interrupted", "Review a.py for bugs.", "/review a.py")
    [info] = store.list_sessions().sessions
    [final] = parse(store._text(info.session_id)).turns
    assert (final.status, final.typed) == ("ok", "/review a.py")
