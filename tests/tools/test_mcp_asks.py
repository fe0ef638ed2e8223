"""Sampling and elicitation against the reference server-everything (npm): rollchat declares
both, so the server offers its trigger-sampling-request and trigger-elicitation-request tools;
a sampling request is answered by the chat's own model (the wire server receives it) after the
user approves, and refused when they decline; a form is filled in by the user's answers.
The first test starts the server over stdio; the others share one started over streamable HTTP
for the module (each node start is seconds of CPU; each test still has its own session)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rollchat.config.mcp_servers import McpServerConfig, check_server
from rollchat.providers.openai import OpenAIProvider
from rollchat.tools.mcp.asks import Field, SampleRequest, chat_sampler, read_value
from rollchat.tools.mcp_convert import McpToolError
from tests.mcp_helpers import everything_http, everything_stdio, servers, start
from tests.wire_servers import WireServer, openai_server, text

__all__ = ["openai_server", "servers"]  # the fixtures, imported for pytest
# The tests sharing the module's server run on one worker (an xdist group: one node start);
# everything_entry's file lock makes the npm install one for parallel workers.
SHARED = pytest.mark.xdist_group("mcp-asks-http")


@pytest.fixture(scope="module")
def everything_url() -> Iterator[str]:
    """One server-everything over streamable HTTP for the module's tests."""
    with everything_http() as (url, _):
        yield url


def everything(url: str) -> McpServerConfig:
    return check_server("everything", {"url": url}, base_dir=Path.cwd(), origin="test")


class User:
    """A scripted user: approves sampling or not, fills forms with ``form``."""

    def __init__(self, approve: bool, form: dict[str, Any] | None = None) -> None:
        self.approve, self.form = approve, form
        self.samples: list[SampleRequest] = []
        self.forms: list[tuple[str, str, tuple[Field, ...]]] = []

    def approve_sampling(self, request: SampleRequest) -> bool:
        self.samples.append(request)
        return self.approve

    def elicit(self, server: str, message: str, fields: tuple[Field, ...]) -> Any:
        self.forms.append((server, message, fields))
        return ("accept", self.form) if self.form is not None else ("decline", None)


def test_sampling_goes_through_the_chat_s_model_after_approval(
        servers, openai_server: WireServer) -> None:
    openai_server.push(text("Paris, of course."))
    user = User(approve=True)
    sampler = chat_sampler(OpenAIProvider("gpt-4o", api_key="k", base_url=openai_server.url,
                                          timeout=10), "gpt-4o")
    source = start(servers, everything_stdio(), asker=user, sampler=sampler)
    tools, _ = source.collect(wait=True)
    result = tools["mcp__everything__trigger-sampling-request"].run(
        {"prompt": "capital of France?", "maxTokens": 50})
    assert "Paris, of course." in str(result) and '"model": "gpt-4o"' in str(result)
    [asked] = user.samples
    assert asked.server == "everything" and "capital of France?" in asked.messages[0][1]
    body = openai_server.bodies[-1]
    assert body["messages"][0] == {"role": "system", "content": "You are a helpful test server."}
    assert "capital of France?" in str(body["messages"][1]["content"])
    assert not body.get("tools")


@SHARED
def test_declined_sampling_is_an_error_and_no_model_call(
        servers, openai_server: WireServer, everything_url: str) -> None:
    user = User(approve=False)
    sampler = chat_sampler(OpenAIProvider("gpt-4o", api_key="k", base_url=openai_server.url,
                                          timeout=10), "gpt-4o")
    source = start(servers, everything(everything_url), asker=user, sampler=sampler)
    tools, _ = source.collect(wait=True)
    with pytest.raises(McpToolError, match="declined the sampling request"):
        tools["mcp__everything__trigger-sampling-request"].run({"prompt": "hi"})
    assert not openai_server.bodies and len(user.samples) == 1


@SHARED
def test_elicitation_is_asked_and_the_answers_reach_the_server(
        servers, everything_url: str) -> None:
    user = User(approve=False, form={"name": "Ada", "integer": 7, "check": True})
    source = start(servers, everything(everything_url), asker=user)
    tools, _ = source.collect(wait=True)
    assert "mcp__everything__trigger-sampling-request" not in tools  # no model: not declared
    result = str(tools["mcp__everything__trigger-elicitation-request"].run({}))
    assert "- Name: Ada" in result and "- Favorite Integer: 7" in result
    [(server, message, fields)] = user.forms
    assert server == "everything" and message
    by_name = {f.name: f for f in fields}
    assert by_name["name"].required and by_name["integer"].kind == "integer"
    assert ("pet-2", "Dogs") in by_name["legacyTitledEnum"].choices
    assert by_name["untitledMultipleSelectEnum"].kind == "array"
    assert by_name["untitledMultipleSelectEnum"].choices


@SHARED
def test_without_an_asker_nothing_is_declared(servers, everything_url: str) -> None:
    tools, _ = start(servers, everything(everything_url)).collect(wait=True)
    assert not [n for n in tools if "sampling" in n or "elicitation-request" in n]


def test_typed_values_are_read_as_the_schema_wants() -> None:
    assert read_value(Field("n", "N", "integer"), "42") == 42
    assert read_value(Field("b", "B", "boolean"), "y") is True
    with pytest.raises(ValueError, match="whole number"):
        read_value(Field("n", "N", "integer"), "4.5")
    with pytest.raises(ValueError, match="choose one of a, b"):
        read_value(Field("c", "C", "string", choices=(("a", "A"), ("b", "B"))), "z")


@SHARED
def test_a_server_that_asks_at_once_is_answered(servers, openai_server: WireServer,
                                                 monkeypatch: pytest.MonkeyPatch,
                                                 everything_url: str) -> None:
    """The server may ask before the chat's thread starts waiting for the call's result: the
    call counts as running from before it is sent (CI once saw the quick server refused)."""
    import time

    from rollchat.tools.mcp import McpServers

    waited = McpServers._wait

    def late_wait(self: Any, future: Any, *args: Any) -> Any:
        # the chat's thread is slow to start waiting: the server's question comes first
        end = time.monotonic() + 30
        while self._asks._queue.empty() and not future.done() and time.monotonic() < end:
            time.sleep(0.01)
        return waited(self, future, *args)

    monkeypatch.setattr(McpServers, "_wait", late_wait)
    openai_server.push(text("Paris."))
    sampler = chat_sampler(OpenAIProvider("gpt-4o", api_key="k", base_url=openai_server.url,
                                          timeout=10), "gpt-4o")
    source = start(servers, everything(everything_url), asker=User(approve=True),
                   sampler=sampler)
    tools, _ = source.collect(wait=True)
    result = tools["mcp__everything__trigger-sampling-request"].run({"prompt": "capital?"})
    assert "Paris." in str(result)
