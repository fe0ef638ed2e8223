"""Python functions as tools (tools/python.py): the schema from signature and docstring in
each docstring style, validation before the call, async functions, results as text."""

from __future__ import annotations

import asyncio
from enum import Enum
from typing import Literal, Optional

import pytest

from rollchat.tools.python import ArgumentsError, ToolDefinitionError, function_tool


class Colour(Enum):
    RED = "red"
    BLUE = "blue"


def paint(wall: str, colour: Colour, coats: int = 2,
          finish: Literal["matte", "gloss"] = "matte", note: Optional[str] = None) -> dict:  # noqa: UP045
    """Paint a wall.

    Takes a while.

    Parameters
    ----------
    wall : str
        Which wall.
    colour : Colour
        The paint.
    coats : int
        How many coats.
    """
    return {"wall": wall, "colour": colour.value, "coats": coats, "finish": finish}


async def fetch(url: str, retries: int = 0) -> str:
    """Fetch a page.

    :param url: The address.
    :param retries: How often to retry.
    """
    await asyncio.sleep(0)
    return f"fetched {url} ({retries})"


def test_numpy_docstring_enum_literal_optional_and_defaults() -> None:
    tool = function_tool(paint)
    spec = tool.spec
    assert spec.name == "paint" and spec.description == "Paint a wall.\n\nTakes a while."
    params = spec.parameters
    assert params["required"] == ["wall", "colour"]
    assert params["additionalProperties"] is False
    props = params["properties"]
    assert props["wall"] == {"type": "string", "description": "Which wall."}
    assert props["coats"] == {"type": "integer", "default": 2, "description": "How many coats."}
    assert props["finish"]["enum"] == ["matte", "gloss"]
    assert {"type": "null"} in props["note"]["anyOf"] and props["note"]["default"] is None
    assert params["$defs"]["Colour"]["enum"] == ["red", "blue"]
    assert tool.run({"wall": "north", "colour": "blue"}) == (
        '{"wall": "north", "colour": "blue", "coats": 2, "finish": "matte"}')


def test_validation_errors_name_each_argument() -> None:
    tool = function_tool(paint)
    with pytest.raises(ArgumentsError) as caught:
        tool.run({"colour": "green", "coats": "two", "extra": True})
    text = str(caught.value)
    assert text.startswith("invalid arguments: ")
    assert "wall: Field required" in text and "colour: Input should be 'red' or 'blue'" in text
    assert "coats: Input should be a valid integer" in text
    assert "extra: Extra inputs are not permitted" in text


def test_async_tools_with_sphinx_docstrings() -> None:
    tool = function_tool(fetch)
    assert tool.spec.parameters["properties"]["url"]["description"] == "The address."
    assert tool.run({"url": "http://x", "retries": 1}) == "fetched http://x (1)"
    assert tool.source == "agent" and not tool.read_only


def test_what_cannot_be_a_tool() -> None:
    with pytest.raises(ToolDefinitionError, match="lambda"):
        function_tool(lambda x: x)

    def positional(a: int, /) -> int:
        return a

    with pytest.raises(ToolDefinitionError, match="positional-only"):
        function_tool(positional)
