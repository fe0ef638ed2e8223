"""An agent file's plain typed Python functions as tools: the JSON schema from the signature and
the docstring, arguments validated by the same pydantic model before the call."""

# An agent file's plain typed Python functions as tools: the JSON schema comes from the
# signature (pydantic: types, defaults, Optional, Literal and Enum) and the docstring
# (docstring_parser: Google, NumPy or Sphinx style, per-parameter descriptions); arguments are
# validated by the same pydantic model before the call, and a validation error goes back to
# the model as the tool's result. Sync and async functions both work.
#
# Imported only when an agent file is loaded (pydantic costs time at start-up).

from __future__ import annotations

import asyncio
import inspect
import json
import re
import typing
from collections.abc import Callable, Mapping
from typing import Any

import docstring_parser
import pydantic

from rollchat.domain import Image
from rollchat.errors import ConfigError
from rollchat.providers.base import ToolSpec
from rollchat.tools import Tool
from rollchat.tools.images import ToolReturn

_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")  # what both Anthropic and OpenAI accept


class ToolDefinitionError(ConfigError):
    """A function that cannot be a tool (the message names it and why)."""


class ArgumentsError(Exception):
    """The model's arguments do not fit the function's signature (sent back to the model)."""


def function_tool(fn: Callable[..., Any], *, source: str = "agent",
                  read_only: bool = False) -> Tool:
    """The ``Tool`` for ``fn``: its spec from the signature and docstring, and a run that
    validates the arguments, calls ``fn`` (awaiting it if async) and returns text."""
    name = getattr(fn, "__name__", "")
    if not callable(fn) or not _NAME.fullmatch(name):
        raise ToolDefinitionError(f"tool {name or fn!r}: a tool must be a named function "
                                  "(names: 1-64 letters, digits, '_' or '-')")
    model, description = _arguments_model(fn, name)
    spec = ToolSpec(name, description, _clean_schema(model.model_json_schema()))
    return Tool(spec, _Runner(fn, model), read_only=read_only, source=source)


def _arguments_model(fn: Callable[..., Any], name: str) -> tuple[type[pydantic.BaseModel], str]:
    try:
        signature = inspect.signature(fn)
        hints = typing.get_type_hints(fn, include_extras=True)
    except (TypeError, ValueError, NameError) as exc:
        raise ToolDefinitionError(f"tool {name}: cannot read its signature: {exc}") from None
    doc = docstring_parser.parse(inspect.getdoc(fn) or "")
    described = {p.arg_name: p.description for p in doc.params if p.description}
    fields: dict[str, Any] = {}
    for param in signature.parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD, param.POSITIONAL_ONLY):
            raise ToolDefinitionError(f"tool {name}: parameter {param.name!r} must be a plain "
                                      "named parameter (no *args, **kwargs or positional-only)")
        annotation = hints.get(param.name, Any)
        default = ... if param.default is inspect.Parameter.empty else param.default
        fields[param.name] = (annotation, pydantic.Field(default,
                                                         description=described.get(param.name)))
    try:
        model = pydantic.create_model(
            f"{name}_arguments", __config__=pydantic.ConfigDict(extra="forbid"), **fields)
        model.model_json_schema()
    except (pydantic.PydanticUserError, pydantic.PydanticSchemaGenerationError,
            TypeError) as exc:
        raise ToolDefinitionError(f"tool {name}: its parameter types cannot be described as "
                                  f"JSON: {str(exc).splitlines()[0]}") from None
    parts = [doc.short_description or "", doc.long_description or ""]
    description = "\n\n".join(p.strip() for p in parts if p and p.strip()) or name
    return model, description


def _clean_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """The model's schema without pydantic's generated titles (noise for the model)."""
    schema.pop("title", None)
    for prop in schema.get("properties", {}).values():
        if isinstance(prop, dict):
            prop.pop("title", None)
    schema.setdefault("properties", {})
    return schema


class _Runner:
    """Validate, call, render: the ``run`` of a Python tool."""

    def __init__(self, fn: Callable[..., Any], model: type[pydantic.BaseModel]) -> None:
        self.fn = fn
        self.model = model

    def __call__(self, arguments: Mapping[str, object]) -> object:
        try:
            checked = self.model.model_validate(dict(arguments))
        except pydantic.ValidationError as exc:
            raise ArgumentsError(_validation_text(exc)) from None
        kwargs = {k: getattr(checked, k) for k in type(checked).model_fields}
        result = self.fn(**kwargs)
        if inspect.isawaitable(result):
            result = asyncio.run(_awaited(result))
        return render_result(result)


async def _awaited(awaitable: Any) -> Any:
    return await awaitable


def _validation_text(exc: pydantic.ValidationError) -> str:
    problems = []
    for error in exc.errors(include_url=False):
        where = ".".join(str(part) for part in error.get("loc", ())) or "arguments"
        problems.append(f"{where}: {error.get('msg', 'invalid')}")
    return "invalid arguments: " + "; ".join(problems)


def render_result(result: object) -> object:
    """A tool's return value as the model reads it: text, or (image bytes, an Image, a
    ToolReturn) as it is, for the runner to send as an image (tools/images.py)."""
    if result is None:
        return "(no output)"
    if isinstance(result, (str, bytes, bytearray, Image, ToolReturn)):
        return result
    if isinstance(result, pydantic.BaseModel):
        return result.model_dump_json()
    try:
        return json.dumps(result, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(result)
