"""Small windows: the session's own tools (the archive, memory search) take at most a twentieth
of the window: whole in a large one, in their brief form in a small one, and left out (the ones
offered beside others first) when even that does not fit; the choice holds for a whole
context, so the request prefix stays the same from turn to turn."""

from __future__ import annotations

import pytest

from rollchat.memory.tool import MEMORY_DESCRIPTION, memory_tool
from rollchat.models.tokens import TokenCounter
from rollchat.session.build import OWN_TOOLS_SHARE, fitted, spec_cost
from rollchat.storage.in_memory import InMemoryStore
from rollchat.tools import ARCHIVE_TOOL_NAME, MEMORY_TOOL_NAME
from rollchat.tools.archive import ARCHIVE_BRIEF, ARCHIVE_DESCRIPTION, archive_tool
from tests.memory.test_memory_layers import Facts, chats, make

COUNT = TokenCounter("gpt-4o").count_text


def _tools(parent: str | None = "parent_1") -> list:  # type: ignore[type-arg]
    return [archive_tool(InMemoryStore(), parent), memory_tool(None)]  # type: ignore[arg-type]


@pytest.mark.parametrize(("window", "shape"), [
    (128_000, {ARCHIVE_TOOL_NAME: "whole", MEMORY_TOOL_NAME: "whole"}),
    (8_192, {ARCHIVE_TOOL_NAME: "brief", MEMORY_TOOL_NAME: "brief"}),
    (4_096, {ARCHIVE_TOOL_NAME: "brief", MEMORY_TOOL_NAME: "brief"}),
    (2_048, {ARCHIVE_TOOL_NAME: "brief"}),
    (1_024, {}),
])
def test_the_own_tools_fit_the_window(window: int, shape: dict[str, str]) -> None:
    kept = fitted(_tools(), window, COUNT)
    assert {t.name: "brief" if t.spec == t.brief else "whole" for t in kept} == shape
    assert not kept or spec_cost(kept, COUNT) <= window * OWN_TOOLS_SHARE
    whole = spec_cost(_tools(), COUNT)
    assert whole > 400 and spec_cost(fitted(_tools(), 4_096, COUNT), COUNT) < whole / 3


def test_a_companion_gives_way_first() -> None:
    """With no parent the archive is offered only beside other tools: in a 2K window the memory
    tool, offered on its own, keeps the room."""
    kept = fitted(_tools(parent=None), 2_048, COUNT)
    assert [t.name for t in kept] == [MEMORY_TOOL_NAME]


@pytest.mark.parametrize("window", [2_048, 128_000])
def test_a_child_session_offers_the_archive_as_its_window_allows(window: int) -> None:
    core, _, provider = make(Facts([]), window=window)
    list(core.turn("the deploy uses blue/green on port 8443"))
    list(core.compact())
    list(core.turn("which port again?"))
    list(core.turn("and the strategy?"))
    after = chats(provider)[-2:]
    (spec,) = after[0].tools
    assert spec.name == ARCHIVE_TOOL_NAME
    assert spec == (ARCHIVE_BRIEF if window < 8_000 else spec) and (
        (spec.description == ARCHIVE_DESCRIPTION) == (window > 8_000))
    assert after[1].tools == after[0].tools  # the same for the whole context
    assert MEMORY_DESCRIPTION not in repr(after)
