"""What an MCP server may ask of rollchat during a tool call: sampling (a message from the chat's
own model, after the user approves it) and elicitation (a form the user fills in at the
prompt). The questions are asked on the chat's thread, through an ``McpAsker`` the UI gives."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from rollchat.domain import Message
from rollchat.providers.base import ChatRequest, Provider, TextDelta

MAX_SAMPLE_TOKENS = 4_000  # the most a server's sampling request may have the model write

Action = Literal["accept", "decline", "cancel"]


@dataclass(frozen=True)
class SampleRequest:
    """A server's ``sampling/createMessage``, as text: its system prompt, its messages
    (role, text) and how many tokens it wants at most."""

    server: str
    system: str
    messages: tuple[tuple[str, str], ...]
    max_tokens: int


@dataclass(frozen=True)
class Field:
    """One field of an elicitation form: its name, title, JSON type (``string``,
    ``integer``, ``number``, ``boolean``, ``array``), the choices (value, label) if it has
    some, whether it is required, and its default."""

    name: str
    title: str
    kind: str
    description: str = ""
    choices: tuple[tuple[str, str], ...] = ()
    required: bool = False
    default: Any = None


class McpAsker(Protocol):
    """The user, as an MCP server reaches them (on the chat's thread)."""

    def approve_sampling(self, request: SampleRequest) -> bool:
        """Whether the chat's model may answer ``request`` (its text shown first)."""

    def elicit(self, server: str, message: str, fields: tuple[Field, ...]
               ) -> tuple[Action, dict[str, Any] | None]:
        """The user's answer to a form: accept with the values, decline, or cancel."""


Sampler = Callable[[SampleRequest], tuple[str, str]]  # -> (the text, the model that wrote it)


def chat_sampler(provider: Provider, model: str) -> Sampler:
    """Sampling through the chat's own provider and model: one request, no tools."""

    def sample(request: SampleRequest) -> tuple[str, str]:
        messages = tuple(Message("assistant" if role == "assistant" else "user", text)
                         for role, text in request.messages)
        chat = ChatRequest(model=model, system=request.system, messages=messages,
                           max_output_tokens=min(max(request.max_tokens, 1),
                                                 MAX_SAMPLE_TOKENS),
                           temperature=None, tools=(), purpose="chat")
        return "".join(_texts(provider.stream(chat))), model

    return sample


def _texts(events: Iterator[Any]) -> Iterator[str]:
    for event in events:
        if isinstance(event, TextDelta):
            yield event.text


def sample_request(server: str, params: Any) -> SampleRequest:
    """The SDK's ``CreateMessageRequestParams`` as a SampleRequest (non-text content
    described in a line)."""
    messages = []
    for message in getattr(params, "messages", None) or ():
        content = message.content
        blocks = content if isinstance(content, list) else [content]
        text = "\n".join(str(b.text) if getattr(b, "type", "") == "text"
                         else f"[{getattr(b, 'type', 'unknown')} content, not shown]"
                         for b in blocks)
        messages.append((str(message.role), text))
    return SampleRequest(server, getattr(params, "system_prompt", None) or "",
                         tuple(messages), int(getattr(params, "max_tokens", 0) or 0))


def form_fields(schema: Mapping[str, Any]) -> tuple[Field, ...]:
    """The fields of an elicitation's ``requestedSchema`` (a flat object schema)."""
    required = set(schema.get("required") or ())
    fields = []
    for name, spec in (schema.get("properties") or {}).items():
        if not isinstance(spec, Mapping):
            continue
        kind = str(spec.get("type") or "string")
        choices = _choices(spec.get("items") if kind == "array" else spec)
        fields.append(Field(name, str(spec.get("title") or name), kind,
                            str(spec.get("description") or ""), choices, name in required,
                            spec.get("default")))
    return tuple(fields)


def _choices(spec: Any) -> tuple[tuple[str, str], ...]:
    if not isinstance(spec, Mapping):
        return ()
    if isinstance(spec.get("enum"), list):
        labels = spec.get("enumNames") or spec["enum"]
        return tuple((str(v), str(label)) for v, label in zip(spec["enum"], labels, strict=False))
    for key in ("oneOf", "anyOf"):
        if isinstance(spec.get(key), list):
            return tuple((str(o.get("const")), str(o.get("title") or o.get("const")))
                         for o in spec[key] if isinstance(o, Mapping) and "const" in o)
    return ()


def read_value(field: Field, typed: str) -> Any:
    """What the user typed for ``field`` as the value the server's schema wants; ValueError
    with what to type when it is not."""
    text = typed.strip()
    values = [c[0] for c in field.choices]
    if field.kind == "boolean":
        if text.lower() in ("y", "yes", "true"):
            return True
        if text.lower() in ("n", "no", "false"):
            return False
        raise ValueError("type y or n")
    if field.kind in ("integer", "number"):
        try:
            number = float(text)
        except ValueError:
            raise ValueError(f"type {'a whole number' if field.kind == 'integer' else 'a number'}"
                             ) from None
        if field.kind == "integer":
            if not number.is_integer():
                raise ValueError("type a whole number")
            return int(number)
        return number
    if field.kind == "array":
        picked = [p.strip() for p in text.split(",") if p.strip()]
        wrong = [p for p in picked if values and p not in values]
        if wrong:
            raise ValueError(f"choose from {', '.join(values)} (commas between)")
        return picked
    if values and text not in values:
        raise ValueError(f"choose one of {', '.join(values)}")
    return text
