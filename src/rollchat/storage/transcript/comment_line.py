"""One HTML comment line kept beside a summary block (the signed block's, the framework state's):
a mark and an opening sentence, a JSON object in plain ASCII with ``<`` and ``>`` escaped (so the
comment ends only where it should), `` -->``; bounded in length; read back to the object."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

# a provider's or a framework's name, a block's type
NAME = re.compile(r"[a-z][a-z0-9_.-]{0,39}")
_CLOSE = " -->"


def canonical(value: object, *, allow_nan: bool = True) -> str:
    """``value`` as compact JSON, non-ASCII kept (how a kept value's text is compared)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=allow_nan)


def escaped_json(value: object) -> str:
    """``value`` as one line of plain ASCII JSON, ``<`` and ``>`` escaped."""
    text = json.dumps(value, ensure_ascii=True, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e")


def json_object(text: str) -> dict[str, Any]:
    """The JSON object ``text`` holds (ValueError: not JSON; TypeError: not an object)."""
    value = json.loads(text)
    if not isinstance(value, dict):
        raise TypeError("not a JSON object")
    return value


@dataclass(frozen=True)
class CommentLine:
    """A kind of line: it starts with ``mark`` (whatever follows, how it is told apart),
    ``mark + sentence`` opens it, and it is ``max_chars`` long at the most."""

    mark: str
    sentence: str
    max_chars: int

    def write(self, value: object) -> str:
        """The line keeping ``value`` (as :func:`escaped_json`), whatever its length."""
        return self.mark + self.sentence + escaped_json(value) + _CLOSE

    def read(self, line: str) -> dict[str, Any]:
        """The JSON object ``line`` keeps (ValueError: too long, not the line written or not
        JSON; TypeError: not an object)."""
        if len(line) > self.max_chars:
            raise ValueError(f"longer than {self.max_chars:,} characters")
        opening = self.mark + self.sentence
        if not (line.startswith(opening) and line.endswith(_CLOSE)):
            raise ValueError("not the line rollchat writes")
        return json_object(line[len(opening):-len(_CLOSE)])
