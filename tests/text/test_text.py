"""Wording helpers: plurals, and URLs shown without their secrets."""

from __future__ import annotations

import pytest

from rollchat.providers.sdk import split_query
from rollchat.text.wording import has_secret_in_url, plural, redact_url, redact_urls

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


@pytest.mark.parametrize(("text", "expected"), [
    ("GET http://u:pw@h/v1?api_key=s3cr3t&v=2 failed",
     "GET http://[redacted]@h/v1?api_key=[redacted]&v=2 failed"),
    ("no route /v1/?api_key=zzzchat/completions", "no route /v1/?api_key=[redacted]"),
    ("https://h/x?X-Amz-Signature=abc;access_token=t#f",
     "https://h/x?X-Amz-Signature=[redacted];access_token=[redacted]#f"),
    ("https://h/x?model=m&page=2", "https://h/x?model=m&page=2"),
    ("plain words, no url", "plain words, no url"),
])
def test_redact_urls_in_messages(text: str, expected: str) -> None:
    assert redact_urls(text) == expected
    assert has_secret_in_url(text) == (text != expected)


def test_split_query_moves_the_query_to_the_sdk() -> None:
    assert split_query("http://u:p@h:1/v1?api_key=s&v=") == (
        "http://u:p@h:1/v1", {"api_key": "s", "v": ""})
    assert split_query(OLLAMA) == (OLLAMA, None)
    assert split_query(None) == (None, None)
