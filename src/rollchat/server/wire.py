"""``rollchat mcp``'s wire: stdio in front of the SDK's server, so every malformed input gets the
JSON-RPC error the spec names (-32700 parse error, -32600 invalid request, -32602 invalid
params, a tool's arguments checked strictly against its schema) in rollchat's words."""

# The SDK's stdio transport hands a line it cannot read to the server as an exception, which
# the server drops: the client waits for an answer that never comes. Here each item the
# transport reads passes a check first; what fails is answered at once and never reaches the
# SDK, so no pydantic text (nor its URLs) and no lax coercion (``limit: true`` as 1) remain.

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import anyio
import jsonschema
import mcp_types as types
from mcp.shared.message import SessionMessage

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

PARSE_ERROR, INVALID_REQUEST, INVALID_PARAMS = -32700, -32600, -32602
_TYPES = {"integer": "an integer", "number": "a number", "string": "a string",
          "boolean": "true or false", "object": "an object", "array": "an array",
          "null": "null"}


class Refused(Exception):
    """An input answered with a JSON-RPC error: its code, message and the request's id."""

    def __init__(self, code: int, message: str, request_id: Any = None) -> None:
        super().__init__(message)
        self.code, self.request_id = code, request_id


async def serve_stdio(server: MCPServer[Any]) -> None:
    """Serve ``server`` over stdio until the client closes the connection, every input
    checked before the SDK sees it."""
    from mcp.server.stdio import stdio_server

    lowlevel = server._lowlevel_server
    async with stdio_server() as (read, write):
        send, receive = anyio.create_memory_object_stream[SessionMessage | Exception](0)

        async def pump() -> None:
            async with send:
                async for item in read:
                    try:
                        await check(item, server)
                    except Refused as refused:
                        await write.send(error(refused))
                        continue
                    await send.send(item)

        async with anyio.create_task_group() as group:
            group.start_soon(pump)
            await lowlevel.run(receive, write, lowlevel.create_initialization_options())
            group.cancel_scope.cancel()


def error(refused: Refused) -> SessionMessage:
    """The JSON-RPC error message for ``refused``."""
    request_id = refused.request_id if isinstance(refused.request_id, (str, int)) \
        and not isinstance(refused.request_id, bool) else None
    return SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=request_id, error=types.ErrorData(
        code=refused.code, message=str(refused))))


async def check(item: SessionMessage | Exception, server: MCPServer[Any]) -> None:
    """Refused for a line that is not JSON, not a JSON-RPC 2.0 message, or a request whose
    params (a tool call's arguments included) do not fit its method."""
    if isinstance(item, Exception):
        raise _unreadable(item)
    message = item.message
    if not isinstance(message, types.JSONRPCRequest):
        return
    params = message.params
    if message.method == "tools/call":
        await _check_call(params, message.id, server)
        return
    try:
        types.client_request_adapter.validate_python(
            {"method": message.method, **({"params": params} if params is not None else {})},
            by_name=False, strict=True)
    except ValueError as exc:
        problems = _of_method(_problems(exc))
        if problems is None:
            return  # the SDK answers -32601 (method not found)
        raise Refused(INVALID_PARAMS, f"invalid params for {message.method}: "
                      f"{_first_problem(problems)}", message.id) from None


def _unreadable(exc: Exception) -> Refused:
    """What the transport could not read: not JSON (-32700), else not a request (-32600)."""
    problems = _problems(exc)
    if any(p.get("type") == "json_invalid" for p in problems):
        return Refused(PARSE_ERROR, "parse error: the line is not valid JSON")
    found = next((p["input"] for p in problems if isinstance(p.get("input"), dict)), None)
    request_id = found.get("id") if isinstance(found, dict) else None
    return Refused(INVALID_REQUEST, "invalid request: a JSON-RPC 2.0 message is an object "
                   'with "jsonrpc": "2.0" and a "method" (a request also has an "id": a '
                   "string or a number); batches are not supported", request_id)


async def _check_call(params: Any, request_id: Any, server: MCPServer[Any]) -> None:
    if not isinstance(params, dict) or not isinstance(params.get("name"), str):
        raise Refused(INVALID_PARAMS, 'invalid params for tools/call: "name" (a string) is '
                      "required", request_id)
    arguments = params.get("arguments", {})
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise Refused(INVALID_PARAMS, '"arguments" must be an object', request_id)
    tools = {tool.name: tool for tool in await server.list_tools()}
    tool = tools.get(params["name"])
    if tool is None:
        raise Refused(INVALID_PARAMS, f"unknown tool {params['name']!r}; the tools are "
                      f"{', '.join(sorted(tools))}", request_id)
    schema = {**tool.input_schema, "additionalProperties": False}
    problem = next(iter(sorted(jsonschema.Draft202012Validator(schema).iter_errors(arguments),
                               key=lambda e: list(e.path))), None)
    if problem is not None:
        raise Refused(INVALID_PARAMS, f"invalid arguments for {tool.name}: "
                      f"{_described(problem)}", request_id)


def _described(problem: jsonschema.ValidationError) -> str:
    """A schema violation in rollchat's words (never the library's)."""
    where = ".".join(str(p) for p in problem.absolute_path) or "arguments"
    kind, expected = problem.validator, problem.validator_value
    if kind == "required":
        missing = next((n for n in expected if n not in (problem.instance or {})), "?")
        return f"{missing} is required"
    if kind == "additionalProperties":
        known = set(problem.schema.get("properties") or {})
        extra = sorted(k for k in (problem.instance or {}) if k not in known)
        return f"unknown argument {', '.join(extra)}; the arguments are " \
               f"{', '.join(sorted(known)) or 'none'}"
    if kind == "type":
        names = expected if isinstance(expected, list) else [expected]
        return f"{where} must be {' or '.join(_TYPES.get(str(n), str(n)) for n in names)}"
    if kind == "enum":
        return f"{where} must be one of {', '.join(json.dumps(v) for v in expected)}"
    if kind in ("anyOf", "oneOf"):
        members = [str(s["type"]) for s in expected if isinstance(s, dict) and s.get("type")]
        kinds = " or ".join(_TYPES.get(m, m) for m in members)
        return f"{where} must be {kinds or 'valid'}"
    return f"{where} does not fit its schema ({kind})"


def _problems(exc: Exception) -> list[dict[str, Any]]:
    errors = getattr(exc, "errors", None)
    try:
        found = errors() if callable(errors) else []
    except Exception:  # not a validation error: nothing to read from it
        return []
    return [dict(p) for p in found]


def _of_method(problems: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
    """The problems of the request type whose method matched (the union's other members
    fail on their method), or None when no type has that method."""
    wrong = {p["loc"][0] for p in problems if p.get("loc") and p.get("type") == "literal_error"
             and [str(x) for x in p["loc"][1:]] == ["method"]}
    mine = [p for p in problems if p.get("loc") and p["loc"][0] not in wrong]
    return mine or None


def _first_problem(problems: list[dict[str, Any]]) -> str:
    """The first problem, as "where what", without library text."""
    for problem in problems:
        loc = [str(x) for x in problem.get("loc", ())[1:]]
        where = ".".join(x for x in loc if x != "params") or "params"
        kind = str(problem.get("type", ""))
        what = ("is required" if kind == "missing" else "must be an object"
                if kind in ("model_type", "dict_type") else "is not allowed"
                if kind == "extra_forbidden" else f"has the wrong type ({kind})")
        return f"{where} {what}"
    return "they do not fit the method"
