"""How many examples a property test tries: a fifth of its deep count (at least 20) in the
README's test command, the whole deep count with HYPOTHESIS_PROFILE=deep (tests/conftest.py
loads that profile too)."""

from __future__ import annotations

import os

DEEP = os.environ.get("HYPOTHESIS_PROFILE") == "deep"


def examples(deep: int) -> int:
    """``deep`` under HYPOTHESIS_PROFILE=deep, else a fifth of it (at least 20, at most all)."""
    return deep if DEEP else min(deep, max(20, deep // 5))
