"""What a one-shot run (``rollchat -p``) prints on stdout: the answer (text), one JSON object
(json) or one JSON event per line (stream-json), as docs/oneshot.md documents them. Nothing
else goes to stdout; notices and warnings go to stderr."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from typing import IO, Any

from rollchat.domain import ToolExchange, Turn, Usage
from rollchat.events import AnswerAborted, Event, ToolFinished, ToolStarted
from rollchat.providers.base import TextDelta, ThinkingDelta
from rollchat.ui.sanitize import harmless

# The exit codes of a one-shot run (docs/oneshot.md): a refused tool call counts only when
# the answer itself came.
OK, FAILED, USAGE, PROVIDER, TOOL_REFUSED, INTERRUPTED = 0, 1, 2, 3, 4, 130


@dataclass
class Outcome:
    """What the run did, gathered from its events: the object json prints and stream-json's
    ``done`` event carries."""

    model: str
    provider: str
    agent: str
    turn: Turn | None = None
    cost: float | None = None
    # the whole run (restoration, the question, summaries: see Ended.run_usage)
    total_usage: Usage = field(default_factory=Usage)
    total_cost: float | None = None
    session_id: str | None = None
    session_path: str | None = None
    statuses: dict[str, str] = field(default_factory=dict)  # tool call id -> status

    @property
    def refused(self) -> int:
        return sum(1 for s in self.statuses.values() if s == "refused")

    @property
    def stop_reason(self) -> str:
        """end, interrupted, error, max_tokens or max_tool_rounds."""
        turn = self.turn
        if turn is None or turn.status == "unanswered":
            return "error"
        error = turn.error or ""
        if "max_output_tokens" in error:
            return "max_tokens"
        if "max_tool_rounds" in error:
            return "max_tool_rounds"
        return {"ok": "end", "interrupted": "interrupted"}.get(turn.status, "error")

    @property
    def exit_code(self) -> int:
        turn = self.turn
        if turn is not None and turn.status == "interrupted":
            return INTERRUPTED
        if turn is None or turn.status == "unanswered" or self.stop_reason == "error":
            return PROVIDER
        return TOOL_REFUSED if self.refused else OK

    def as_json(self) -> dict[str, Any]:
        turn = self.turn
        usage = turn.usage if turn is not None else None
        return {
            "answer": turn.assistant if turn is not None else "",
            "session_id": self.session_id,
            "session_path": self.session_path,
            "model": self.model,
            "provider": self.provider,
            "agent": self.agent,
            "stop_reason": self.stop_reason,
            "error": turn.error if turn is not None and self.stop_reason == "error" else None,
            "usage": _usage(usage or Usage()),
            "cost": self.cost,
            "total_usage": _usage(self.total_usage),
            "total_cost_usd": self.total_cost,
            "tool_calls": [self._call(t) for t in (turn.tools if turn is not None else ())],
            "refused_tool_calls": self.refused,
            "exit_code": self.exit_code,
        }


    def _call(self, exchange: ToolExchange) -> dict[str, Any]:
        status = self.statuses.get(exchange.call.id, "error" if exchange.is_error else "ok")
        return {"id": exchange.call.id, "name": exchange.call.name,
                "arguments": dict(exchange.call.arguments), "result": exchange.result,
                "is_error": status != "ok", "status": status}


def _usage(usage: Usage) -> dict[str, int]:
    return {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens,
            "cached_tokens": usage.cache_read_tokens,
            "cache_write_tokens": usage.cache_write_tokens}


class Output:
    """The run's stdout in one of the three formats."""

    def __init__(self, output_format: str, outcome: Outcome, out: IO[str] | None = None) -> None:
        self.format, self.outcome = output_format, outcome
        self.out = out or sys.stdout

    def _line(self, payload: dict[str, Any]) -> None:
        self.out.write(json.dumps(payload, ensure_ascii=False) + "\n")
        self.out.flush()

    def start(self) -> None:
        if self.format == "stream-json":
            o = self.outcome
            self._line({"type": "start", "model": o.model, "provider": o.provider,
                        "agent": o.agent})

    def event(self, event: Event) -> None:
        """One event of the question's turn: stream-json prints what it says."""
        if isinstance(event, ToolFinished):
            self.outcome.statuses[event.call.id] = event.status
        if self.format != "stream-json":
            return
        if isinstance(event, TextDelta):
            self._line({"type": "text", "text": event.text})
        elif isinstance(event, ThinkingDelta):  # (never in the answer, nor in text's output)
            self._line({"type": "thinking", "text": event.text})
        elif isinstance(event, AnswerAborted):
            self._line({"type": "aborted"})  # the text so far is dropped: it is sent again
        elif isinstance(event, ToolStarted):
            self._line({"type": "tool_call", "id": event.call.id, "name": event.call.name,
                        "arguments": dict(event.call.arguments)})
        elif isinstance(event, ToolFinished):
            self._line({"type": "tool_result", "id": event.call.id, "name": event.call.name,
                        "result": event.result, "is_error": event.status != "ok",
                        "status": event.status})

    def done(self) -> None:
        """The end: the answer, the object, or the error and done events."""
        o = self.outcome
        if self.format == "text":
            answer = harmless(o.turn.assistant) if o.turn is not None else ""
            if answer:  # (escaped: it is read in a terminal; json keeps it exact)
                self.out.write(answer if answer.endswith("\n") else answer + "\n")
                self.out.flush()
        elif self.format == "json":
            self._line(o.as_json())
        else:
            whole = o.as_json()
            if whole["error"] is not None:
                self._line({"type": "error", "message": whole["error"]})
            self._line({"type": "done", **whole})
