"""Secrets never become facts: a fact that states a password, an API key or a token, or holds
something shaped like one, is refused wherever it comes from."""

# Secrets never become facts. A remembered fact is sent to the model again and again (in the
# system prompt of every later session, or in a context block), and it sits in a plain file that
# travels with the project; so a fact that states a password, an API key or a token, or holds
# something shaped like one, is refused wherever it comes from (``remember``, the model's
# extraction, the offline rules).

from __future__ import annotations

import re

from rollchat.text.wording import has_secret_in_url

# a secret named, then its value: "password is hunter2", "API key: sk-...", "token = abc"
_NAMED = re.compile(
    r"\b(?P<what>pass(?:word|wd|phrase|code)|pwd|pin(?:\s+code)?|api[\s_-]*key|access[\s_-]*key|"
    r"secret(?:[\s_-]*key)?|client[\s_-]*secret|(?:auth|access|api|bearer|refresh|session)?"
    r"[\s_-]*token|private[\s_-]*key|credentials?|ssh[\s_-]*key)s?\b"
    r"(?:\s+(?:for|of|to|on)\s+[\w.@/-]+)?\s*(?:is|are|was|=|:)\s*[\"'`]?(?P<value>[^\s\"'`]+)",
    re.I)
# words that say where or how a secret is kept, not what it is: "the API key is in .env"
_NOT_A_VALUE = frozenset((
    "a", "an", "the", "in", "on", "at", "from", "under", "inside", "into", "within", "stored",
    "kept", "set", "loaded", "read", "managed", "rotated", "not", "never", "always", "also",
    "only", "still", "now", "held", "saved", "configured", "provided", "passed", "required",
    "needed", "missing", "empty", "expired", "invalid", "valid", "available", "located",
    "defined", "given", "taken", "sent", "generated", "created", "shared", "different", "same",
    "per", "by", "via", "through", "injected", "mounted", "fetched", "pulled", "wrong",
    "correct", "too", "being", "handled", "used", "secret", "private", "public", "rotating",
    "changed", "reset", "revoked", "there", "here", "somewhere", "elsewhere", "encrypted",
    "hashed", "hidden", "redacted", "long", "short", "out",
))
_SHAPES = (
    ("an API key", re.compile(r"\b(?:sk|pk|rk)-(?:[a-z]+-)*[A-Za-z0-9_-]{16,}")),
    ("a GitHub token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_\w{20,})")),
    ("a Slack token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}")),
    ("an AWS access key", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")),
    ("a Google API key", re.compile(r"\bAIza[0-9A-Za-z_-]{30,}")),
    ("a private key", re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY")),
    ("a JSON web token", re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.")),
)
# a long run mixing upper case, lower case and digits: a key or token, not a word or a hash
_RANDOM = re.compile(r"[A-Za-z0-9+/_=-]{32,}")


def secret_in(text: str) -> str | None:
    """What secret ``text`` seems to hold ("a password", "an API key"), or None."""
    for name, shape in _SHAPES:
        if shape.search(text):
            return name
    if has_secret_in_url(text):
        return "a password in a URL"
    for match in _NAMED.finditer(text):
        value = match["value"].strip(".,;:!?)(").lower()
        if value and value not in _NOT_A_VALUE:
            what = " ".join(match["what"].lower().replace("_", " ").replace("-", " ").split())
            return f"a {what}" if what[:1] not in "aeiou" else f"an {what}"
    for run in _RANDOM.findall(text):
        if re.search(r"[a-z]", run) and re.search(r"[A-Z]", run) and re.search(r"\d", run):
            return "a key or token"
    return None
