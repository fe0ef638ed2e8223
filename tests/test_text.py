"""Wording helpers: plurals, and URLs shown without their secrets."""

from __future__ import annotations

import pytest

from rollchat.text import plural, redact_url

OLLAMA = "http://localhost:11434/v1"


@pytest.mark.parametrize(("count", "word", "expected"), [
    (1, "query", "1 query"), (2, "query", "2 queries"), (0, "turn", "0 turns"),
    (1, "summary", "1 summary"), (3, "summary", "3 summaries"), (2, "entry", "2 entries"),
])
def test_plural(count: int, word: str, expected: str) -> None:
    assert plural(count, word) == expected


def test_redact_url() -> None:
    assert redact_url("https://u:p@example.com/v1?api_key=s") == "https://***@example.com/v1"
    assert redact_url(OLLAMA) == OLLAMA


def test_redact_url_drops_the_password_even_without_a_user() -> None:
    assert redact_url("http://:secret@host:8000/v1#frag") == "http://***@host:8000/v1"


def test_redact_url_of_an_invalid_url() -> None:
    assert redact_url("http://[::1") == "<invalid URL>"
