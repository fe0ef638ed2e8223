"""The offline model's tool use, both ways of asking: ``use TOOL {"arg": "value"}`` (exact JSON
arguments) and plain words ("use word_count on 'some text'", "call get_weather city=Paris"),
then a report of the result. Deterministic: the whole agent loop runs without a network."""

# ``use TOOL`` names a tool by its full name, or the last part of an MCP tool's
# ``mcp__server__tool`` name when that is unique. In plain words, the arguments are read from
# the message with the tool's JSON schema.

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from rollchat.domain import Message, ToolCall
from rollchat.providers.base import ToolSpec

_PAIR = re.compile(r"\b([A-Za-z_][A-Za-z0-9_]*)\s*[=:]\s*(\"[^\"]*\"|'[^']*'|[^\s,;]+)")
_QUOTED = re.compile(r"\"([^\"]*)\"|'([^']*)'|“([^”]*)”")
_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?![\w.])")
_FILLER = re.compile(r"^(?:tool\b)?\s*(?:on|for|with|about|to|of|the|:)?\s*", re.IGNORECASE)
_USE = re.compile(r"\s*use\s+([A-Za-z0-9_.-]+)\s*(\{.*\})?\s*", re.DOTALL | re.IGNORECASE)


def requested_call(text: str, tools: Sequence[ToolSpec], call_id: str,
                   ) -> tuple[str, ToolCall | None] | None:
    """(the text before the call, the call) when ``text`` asks for a tool, None otherwise;
    (an explanation, None) when the tool is unknown or the arguments are not a JSON object."""
    match = _USE.fullmatch(text)
    if match is None or not tools:
        return None
    wanted = match[1]
    names = [t.name for t in tools]
    found = [n for n in names if n == wanted] or [n for n in names if n.endswith(f"__{wanted}")]
    if len(found) != 1:
        why = "is offered by more than one server" if found else "is not among my tools"
        return f"The tool {wanted!r} {why}. My tools: {', '.join(names)}.", None
    try:
        arguments = json.loads(match[2]) if match[2] else {}
    except ValueError as exc:
        return f"Those arguments are not valid JSON ({exc}).", None
    if not isinstance(arguments, dict):
        return "The arguments must be a JSON object.", None
    return f"Calling `{found[0]}`.", ToolCall(call_id, found[0], arguments)


def asked_tool(text: str, tools: Sequence[ToolSpec], skip: Sequence[str] = ()) -> ToolSpec | None:
    """The tool the user names in ``text`` (its name, or with spaces for underscores)."""
    lowered = text.lower()
    for spec in sorted(tools, key=lambda t: -len(t.name)):  # the longest name first
        if spec.name in skip:
            continue
        for form in {spec.name.lower(), spec.name.lower().replace("_", " ")}:
            if re.search(rf"(?<![\w]){re.escape(form)}(?![\w])", lowered):
                return spec
    return None


# A plain request names what a tool does in its own words: "count the words in ...", "how many
# words are in ...", "get the weather for Paris". Verbs that only say "give me" need not appear.
_GENERIC = frozenset({"get", "fetch", "tool", "do", "run"})
_GETTING = frozenset({"get", "fetch"})  # may start a request: "get the weather for Paris"
_WORD = re.compile(r"[a-z0-9]+")
_POLITE = re.compile(r"^\W*(?:(?:please|pls|kindly|(?:can|could|would|will)\s+you)\b[\s,]*)*",
                     re.IGNORECASE)
_HOW_MANY = re.compile(r"\bhow\s+many\b", re.IGNORECASE)
# where the text to work on starts after the words naming the tool: "... in/of/on: TEXT"
_TARGET = re.compile(r"^\W*(?:(?:are|is|there)\s+)*(?:(?:in|of|on|for|from)\b)?\s*:?\s*",
                     re.IGNORECASE)


def _stem(word: str) -> str:
    """A word without its plural or -ing ending: "words" and "word", "counting" and "count"."""
    for ending in ("ing", "es", "s"):
        if word.endswith(ending) and len(word) - len(ending) >= 3:
            return word[:-len(ending)]
    return word


def _parts(name: str) -> set[str]:
    """The words of a tool's name (an MCP tool's own part), stemmed, generic verbs left out."""
    own = name.rsplit("__", 1)[-1]
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", own).lower()
    return {_stem(w) for w in _WORD.findall(spaced) if w not in _GENERIC}


def plain_request(text: str, tools: Sequence[ToolSpec], skip: Sequence[str] = (),
                  ) -> tuple[ToolSpec | None, str | None]:
    """The tool a request in plain words asks for, with the text after the words naming it
    ("count the words in this line": word_count, "this line"); (None, None) when it is not a
    request (after a "please" or "can you", its first word is one of the tool's, or it asks
    "how many"), or names not every word of a tool's name."""
    body = _POLITE.sub("", text, count=1).lower()
    first = _stem(next(iter(_WORD.findall(body[:40])), ""))
    how_many = _HOW_MANY.search(body) is not None
    words = [(_stem(m[0]), m.end()) for m in _WORD.finditer(text.lower())]
    stems = {w for w, _ in words} | ({"count"} if how_many else set())
    for spec in sorted(tools, key=lambda t: -len(t.name)):  # the longest name first
        parts = _parts(spec.name)
        if spec.name in skip or not parts or not parts <= stems:
            continue
        if first not in parts | _GETTING and not (how_many and first in ("how", "tell")):
            continue  # not a request: "I want to count words later", "what did I say ..."
        at: dict[str, int] = {}
        for word, end in words:
            at.setdefault(word, end)  # where each word first ends
        rest = text[max(at.get(part, 0) for part in parts):]
        target = _TARGET.match(rest)
        return spec, (rest[target.end():] if target else rest).strip().rstrip("?.!").strip()
    return None, None


def tool_call(text: str, spec: ToolSpec, call_id: str, rest: str | None = None) -> ToolCall:
    """The call of ``spec`` the message asks for: named values (``key=value``), else quoted
    text, numbers, enum values mentioned, else the words after the tool's name (``rest``:
    those of a plain request, see ``plain_request``)."""
    props: Mapping[str, Any] = spec.parameters.get("properties", {}) or {}
    required = list(spec.parameters.get("required", []) or [])
    pairs = {k: _unquote(v) for k, v in _PAIR.findall(text) if k in props}
    quoted = [next(g for g in m.groups() if g is not None) for m in _QUOTED.finditer(text)]
    numbers = _NUMBER.findall(text)
    rest = _after_name(text, spec.name) if rest is None else rest
    args: dict[str, Any] = {}
    for name, schema in props.items():
        kind = _kind(schema)
        if name in pairs:
            args[name] = _convert(pairs[name], kind)
            continue
        enum = _enum(schema)
        if enum:
            hit = next((v for v in enum if isinstance(v, str) and re.search(
                rf"(?<![\w]){re.escape(v.lower())}(?![\w])", text.lower())), None)
            if hit is not None and (hit != rest.strip().lower() or name in required):
                args[name] = hit
            continue
        if kind in ("integer", "number") and numbers:
            args[name] = _convert(numbers.pop(0), kind)
        elif kind == "string" and name in required:
            if quoted:
                args[name] = quoted.pop(0)
            elif rest:
                args[name], rest = rest, ""
    return ToolCall(call_id, spec.name, args)


def answer_from_result(result: str, tool: str) -> str:
    """What the offline model says after a tool ran: its result, quoted."""
    lines = [line for line in result.strip().splitlines() if line.strip()][:12]
    if not lines:
        return f"{tool} returned nothing."
    if lines[0].startswith(("refused:", "error:")):
        return f"I could not use {tool}: {lines[0]}"
    quoted = "\n".join(f"> {line}" for line in lines)
    return f"{tool} says:\n\n{quoted}"


def last_tool_name(messages: Sequence[Message]) -> str:
    return next((m.name for m in reversed(messages) if m.role == "tool" and m.name), "the tool")


def _after_name(text: str, name: str) -> str:
    lowered = text.lower()
    for form in (name.lower(), name.lower().replace("_", " ")):
        index = lowered.find(form)
        if index >= 0:
            tail = _PAIR.sub("", text[index + len(form):]).strip()
            return _FILLER.sub("", tail).strip().rstrip("?.!").strip()
    return ""


def _kind(schema: Mapping[str, Any]) -> str:
    kind = schema.get("type")
    if isinstance(kind, str):
        return kind
    for option in schema.get("anyOf", []) or []:  # Optional[X]: the X
        if isinstance(option, dict) and option.get("type") not in (None, "null"):
            return str(option["type"])
    return "string"


def _enum(schema: Mapping[str, Any]) -> list[Any]:
    if "enum" in schema:
        return list(schema["enum"])
    for option in schema.get("anyOf", []) or []:
        if isinstance(option, dict) and "enum" in option:
            return list(option["enum"])
    return []


def _unquote(value: str) -> str:
    return value[1:-1] if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'" \
        else value


def _convert(value: str, kind: str) -> Any:
    try:
        if kind == "integer":
            return int(value)
        if kind == "number":
            return float(value)
    except ValueError:
        return value  # left to the tool's validation, which tells the model
    if kind == "boolean":
        return value.lower() in ("true", "yes", "1", "on")
    return value
