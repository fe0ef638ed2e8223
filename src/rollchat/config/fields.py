"""Value rules shared by the config file and the environment/flag layers: a Field per setting,
coercion of raw values, and a safe rendering of bad values for error messages."""

from __future__ import annotations

import dataclasses
import math
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rollchat.domain import MIN_THINKING_BUDGET, parse_thinking
from rollchat.providers.names import PROVIDER_CHOICES
from rollchat.text.wording import has_secret_in_url


@dataclass(frozen=True)
class Field:
    """What one setting accepts: its type, the rule in words, and the rule as a predicate."""

    # "str" | "int" | "float" | "bool" | "path" | "scalar" (a bool or a string) | "thinking"
    kind: str
    need: str  # the rule, as shown in error messages ("must be ...")
    ok: Callable[[Any], bool] = lambda _v: True
    nullable: bool = False
    # the most a size or a time may be, whoever sets it (None: no cap); a value over it is
    # refused with the setting and the cap named, never taken (a MemoryError, a hang)
    cap: float | None = None


def capped(spec: Field, cap: float) -> Field:
    """``spec`` with an upper bound (see Field.cap)."""
    return dataclasses.replace(spec, cap=cap)


def over_cap(spec: Field, value: Any) -> str | None:
    """Why ``value`` (already checked against ``spec``) is over its cap, or None."""
    if spec.cap is None or value is None or not isinstance(value, (int, float)) \
            or value <= spec.cap:
        return None
    cap = int(spec.cap) if float(spec.cap).is_integer() else spec.cap
    return f"at most {cap:,} (got {show_value(value)})"


def nonempty(v: Any) -> bool:
    return bool(str(v).strip())


def is_url(v: Any) -> bool:
    return bool(re.fullmatch(r"https?://[^\s/]+\S*", str(v)))


BOOL = Field("bool", "must be true or false")
AUTO_COMPACT = Field("scalar", "must be true, false or ask (on/off work too)",
                     lambda v: isinstance(v, bool) or v == "ask")
POSITIVE = Field("int", "must be a positive integer", lambda v: v > 0)
NONNEG = Field("int", "must be an integer >= 0", lambda v: v >= 0)
SECONDS = Field("float", "must be a number of seconds > 0", lambda v: v > 0)
DELAY = Field("float", "must be a number of seconds >= 0", lambda v: v >= 0)
PROVIDER = Field("str", "must be one of " + ", ".join(PROVIDER_CHOICES),
                 lambda v: v in PROVIDER_CHOICES)
MODEL = Field("str", "must be a model name, or null", nonempty, nullable=True)
THINKING = Field("thinking", f"must be on, off, auto or a budget of at least "
                 f"{MIN_THINKING_BUDGET:,} tokens", nullable=True)
URL = Field("str", "must be an http:// or https:// URL, or null", is_url, nullable=True)


def coerce(spec: Field, value: Any) -> tuple[bool, Any]:
    """Check ``value`` against ``spec``: (True, converted value) or (False, None)."""
    if value is None:
        return spec.nullable, None
    if spec.kind == "thinking":
        try:
            value = parse_thinking(value)
        except ValueError:
            return False, None
        return True, value
    if spec.kind == "bool":
        good = isinstance(value, bool)
    elif spec.kind == "scalar":
        good = isinstance(value, (bool, str))
    elif spec.kind in ("int", "float"):
        good = isinstance(value, int) and not isinstance(value, bool)
        if spec.kind == "float" and (good or isinstance(value, float)):
            try:
                value = float(value)
            except OverflowError:
                return False, None
            good = math.isfinite(value)
    else:
        good = isinstance(value, str)
    if not good or not spec.ok(value):
        return False, None
    if spec.kind == "path":
        value = Path(os.path.expanduser(value))
    return True, value


def show_value(value: Any) -> str:
    """A short, safe rendering of a bad value for an error message (secrets are hidden)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        text = str(value)
        return text if len(text) <= 40 else text[:37] + "..."
    text = str(value)
    if text.startswith(("sk-", "sk_")) or has_secret_in_url(text):
        return "a value that looks like a secret; not shown"
    return repr(text if len(text) <= 40 else text[:37] + "...")


def resolve_path(base: Path, path: Path) -> Path:
    """``path`` as given when absolute, else relative to ``base``."""
    return path if path.is_absolute() else base / path

