"""An MCP server's questions at the prompt (ui/mcp_asks.py): a sampling request is shown and
approved or declined by a letter; a form is filled in field by field, a wrong value asked
again, Enter taking the default or skipping an optional field; Ctrl-D declines."""

from __future__ import annotations

import io
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from prompt_toolkit.input import PipeInput, create_pipe_input
from prompt_toolkit.output import DummyOutput
from rich.console import Console

from rollchat.tools.mcp.asks import Field, SampleRequest
from rollchat.ui.mcp_asks import TerminalMcpAsker
from rollchat.ui.render import Renderer


@contextmanager
def asker() -> Iterator[tuple[TerminalMcpAsker, PipeInput, io.StringIO]]:
    buf = io.StringIO()
    out = Renderer(Console(file=buf, force_terminal=False, color_system=None, width=200),
                   interactive=False)
    with create_pipe_input() as pipe:
        yield TerminalMcpAsker(out, input=pipe, output=DummyOutput()), pipe, buf


REQUEST = SampleRequest("everything", "You are a test server.",
                        (("user", "capital of France?"),), 100)


@pytest.mark.parametrize(("typed", "approved"), [("y\r", True), ("n\r", False)])
def test_sampling_is_shown_then_approved_or_declined(typed: str, approved: bool) -> None:
    with asker() as (user, pipe, buf):
        pipe.send_text(typed)
        assert user.approve_sampling(REQUEST) is approved
    said = buf.getvalue()
    assert "MCP server 'everything' asks the chat's model to write a message" in said
    assert "system: You are a test server." in said and "user: capital of France?" in said


def test_ctrl_d_declines_sampling_through_the_relay() -> None:
    with asker() as (user, pipe, _), pytest.raises(EOFError):
        pipe.send_text("\x04")
        user.approve_sampling(REQUEST)  # the relay turns EOFError into a refusal


def test_a_form_is_filled_in_field_by_field() -> None:
    fields = (Field("name", "Name", "string", required=True),
              Field("age", "Age", "integer"),
              Field("colour", "Colour", "string", choices=(("r", "Red"), ("g", "Green")),
                    default="g"),
              Field("ok", "Agree", "boolean"))
    with asker() as (user, pipe, buf):
        pipe.send_text("y\r" "\r" "Ada\r" "old\r" "36\r" "\r" "y\r")
        action, values = user.elicit("everything", "Who are you?", fields)
    assert action == "accept"
    assert values == {"name": "Ada", "age": 36, "colour": "g", "ok": True}
    said = buf.getvalue()
    assert "Who are you?" in said and "This one is required." in said
    assert "type a whole number, then Enter." in said


def test_a_form_can_be_declined() -> None:
    with asker() as (user, pipe, _):
        pipe.send_text("n\r")
        assert user.elicit("s", "Who?", (Field("name", "Name", "string"),)) == ("decline",
                                                                                None)
