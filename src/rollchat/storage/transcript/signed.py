"""The provider's signed compaction block kept beside a summary block: one HTML comment line
after SESSION_SUMMARY_END (hidden where the markdown is rendered), read back with the summary,
and the digest that tells whether the readable summary changed since the block was written."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import replace

from rollchat.domain import ProviderBlock, Summary
from rollchat.errors import TranscriptError
from rollchat.storage.transcript.comment_line import NAME, CommentLine, canonical
from rollchat.storage.transcript.framework_state import STATE_MARK, read_state, state_line
from rollchat.storage.transcript.summary import render_summary_block

SIGNED_MARK = "<!-- rollchat: signed compaction block"  # how the line starts, whatever follows
# Longer blocks are not kept (the readable summary is): the file's tail, read in bounded
# windows (scan.TAIL_MAX_BYTES), must hold the summary block and this line.
SIGNED_MAX_CHARS = 256 * 1024
_LINE = CommentLine(SIGNED_MARK, " of the provider, sent back first in place of the summary "
                    "above while that is unchanged: ", SIGNED_MAX_CHARS)
_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")


def summary_digest(summary: Summary) -> str:
    """The digest of ``summary``'s readable block as rendered (the edit note left out: an edit
    through ``summary edit`` is said by ``edited`` itself) and of its signed block (provider,
    type and data), so that a change to either, by hand in the file, is seen."""
    block = render_summary_block(replace(summary, edited=""))
    signed = summary.signed
    kept = [block] if signed is None else [block, signed.provider, signed.type, signed.data]
    return "sha256:" + hashlib.sha256(json.dumps(kept).encode("utf-8")).hexdigest()


def signed_line(summary: Summary) -> str | None:
    """The comment line keeping ``summary.signed`` (None: no block, or one too long to keep).
    Plain ASCII with ``<`` and ``>`` escaped, so the comment ends only where it should; a
    block's data in the providers' own form is kept as JSON, any other as its exact text."""
    block = summary.signed
    if block is None:
        return None
    facts: dict[str, object] = {"provider": block.provider, "type": block.type,
                                "for": summary.signed_for or summary_digest(summary)}
    try:
        value = json.loads(block.data)
        # the providers write a block's data in canonical form (providers/anthropic_compaction.py)
        if canonical(value) != block.data:
            raise ValueError("not in the providers' form")
        facts["block"] = value
    except (ValueError, RecursionError):
        facts["data"] = block.data
    line = _LINE.write(facts)
    return line if len(line) <= SIGNED_MAX_CHARS else None


def summary_tail(summary: Summary) -> str:
    """The summary block and, when it has a signed block, its line after it, then the
    framework state's line when it has one (a newline ending each)."""
    line = signed_line(summary)
    state = summary.framework_state
    return (render_summary_block(summary) + ("" if line is None else line + "\n")
            + ("" if state is None else state_line(state) + "\n"))


def after_block(after: str, lineno: int) -> tuple[str, str]:
    """The signed line and the framework state's line of the text ``after`` a summary block
    ("" for each there is not); TranscriptError for any other text there (``lineno``: the
    line after the block's end)."""
    lines = [x.rstrip(" \t\r") for x in after.split("\n") if x.strip()]
    signed = state = ""
    for line in lines:
        if line.startswith(SIGNED_MARK) and not signed and not state:
            signed = line
        elif line.startswith(STATE_MARK) and not state:
            state = line
        else:
            raise TranscriptError(f"line {lineno}: text after the summary block")
    return signed, state


def read_after(summary: Summary, lines: tuple[str, str]) -> Summary:
    """``summary`` with what the lines after its block keep (from :func:`after_block`)."""
    return read_state(read_signed(summary, lines[0]), lines[1])


def read_signed(summary: Summary, line: str) -> Summary:
    """``summary`` with the signed block ``line`` keeps (from :func:`signed_line`); one that
    cannot be read is left out, ``signed_problem`` saying why: the readable summary stands."""
    if not line:
        return summary
    try:
        block, written_for = _read(line)
    except (ValueError, TypeError, KeyError, RecursionError) as e:
        return replace(summary, signed_problem=f"unreadable signed compaction block ({e})")
    return replace(summary, signed=block, signed_for=written_for)


def _read(line: str) -> tuple[ProviderBlock, str]:
    facts = _LINE.read(line)
    provider, kind, written_for = facts["provider"], facts["type"], facts["for"]
    for name, value, pattern in (("provider", provider, NAME), ("type", kind, NAME),
                                 ("for", written_for, _DIGEST)):
        if not isinstance(value, str) or not pattern.fullmatch(value):
            raise ValueError(f"bad {name!r}")
    if "block" in facts:
        value, data = facts["block"], canonical(facts["block"])
    else:
        data = facts["data"]
        value = json.loads(data) if isinstance(data, str) else None
    if not isinstance(value, dict | list):  # the provider sends it back parsed
        raise TypeError("the block is not a JSON object or array")
    return ProviderBlock(provider, kind, data), written_for
