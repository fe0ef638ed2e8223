"""An MCP server's questions at the prompt, during one of its tool calls: may the chat's model
answer its sampling request (shown first), and its elicitation form, field by field."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rollchat.tools.mcp.asks import Action, Field, SampleRequest, read_value
from rollchat.ui.ask import ask

if TYPE_CHECKING:
    from prompt_toolkit.input import Input
    from prompt_toolkit.output import Output

    from rollchat.ui.render import Renderer

SHOWN_CHARS = 600  # of each message a sampling request holds (the rest counted)
_YES_NO = {"y": True, "yes": True, "n": False, "no": False}


class TerminalMcpAsker:
    """Asks in the terminal (``input``/``output``: prompt_toolkit's, for tests). Ctrl-C or
    Ctrl-D at a question declines the sampling, or cancels the form."""

    def __init__(self, out: Renderer, *, input: Input | None = None,
                 output: Output | None = None) -> None:
        self._out, self._input, self._output = out, input, output

    def approve_sampling(self, request: SampleRequest) -> bool:
        out = self._out
        streaming = out.suspend_answer()
        try:
            out.line((f"MCP server {request.server!r} asks the chat's model to write a "
                      f"message (at most {request.max_tokens:,} tokens)", "bold yellow"))
            if request.system:
                out.line(("  system: " + _clip(request.system), "dim"))
            for role, text in request.messages:
                out.line((f"  {role}: {_clip(text)}", ""))
            return bool(self._ask("Let the model answer (its tokens count in this chat)?",
                                  _YES_NO))
        finally:
            if streaming:
                out.resume_answer()

    def elicit(self, server: str, message: str, fields: tuple[Field, ...]
               ) -> tuple[Action, dict[str, Any] | None]:
        out = self._out
        streaming = out.suspend_answer()
        try:
            out.line((f"MCP server {server!r} asks: ", "bold yellow"), (message, ""))
            if not self._ask("Answer it?", _YES_NO):
                return "decline", None
            return "accept", {name: value for name, value in
                              ((f.name, self._field(f)) for f in fields) if value is not None}
        finally:
            if streaming:
                out.resume_answer()

    def _ask(self, question: str, answers: dict[str, bool]) -> bool:
        return ask(question, answers, "y/n", self._out, safe=False, input=self._input,
                   output=self._output)

    def _field(self, field: Field) -> Any:
        """One field's value, asked until it reads (Enter: the default, or none if optional)."""
        from prompt_toolkit import PromptSession

        from rollchat.ui.sanitize import harmless

        hints = [f.strip() for f in (field.description,
                                     ", ".join(f"{v} ({label})" if label != v else v
                                               for v, label in field.choices)) if f.strip()]
        if field.kind == "boolean":
            hints.append("y/n")
        elif field.kind == "array":
            hints.append("several, commas between")
        if field.default is not None:
            hints.append(f"Enter: {field.default}")
        elif not field.required:
            hints.append("Enter: skip")
        prompt = harmless(f"  {field.title}" + (f" [{'; '.join(hints)}]" if hints else "")
                          + ": ")
        session: PromptSession[str] = PromptSession(input=self._input, output=self._output)
        while True:
            typed = session.prompt(prompt)
            if not typed.strip():
                if field.default is not None:
                    return field.default
                if not field.required:
                    return None
                self._out.dim("This one is required.")
                continue
            try:
                return read_value(field, typed)
            except ValueError as exc:
                self._out.dim(f"{exc}, then Enter.")


def _clip(text: str) -> str:
    flat = " ".join(text.split())
    if len(flat) <= SHOWN_CHARS:
        return flat
    return f"{flat[:SHOWN_CHARS]}… ({len(flat) - SHOWN_CHARS:,} more characters)"
