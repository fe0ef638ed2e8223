"""THE session file format, and the only code that knows it: render, parse, summary block,
markers, bounded reads. Pure: bytes and text in, values out; the store does the I/O."""

# Modules: ``syntax`` (markers, escapes, dates), ``render``, ``parse``, ``summary`` (the summary
# block both ways), ``signed`` (the provider's block beside it), ``scan`` (bounded head/tail
# windows, UTF-8 decoding, listing facts).
#
# Format rules (the design's session file, made reversible):
#
# * Content lines (user text, answers, tool results, context, summary text) that could look
#   like structure get one extra leading backslash: any line matching ``\\*`` followed by
#   ``#``, ``**``, ``*`` + a non-space, ``---`` or ``<!--``. The parser removes one. So a raw
#   structural line only ever comes from the renderer: no message can forge a turn or a summary.
#   Summary text lines also escape leading whitespace, section-like labels, a bare ``None`` and
#   code fences, and get a trailing ``\`` when they are empty or end in a space, tab, ``\r``
#   or ``\`` (so a tolerant parser may strip trailing spaces).
# * Single-line values (header fields, tool names and ids, errors, the agent name in labels)
#   escape ``\``, newline and CR as ``\\``, ``\n``, ``\r`` (and ``(``, ``)``, ``*``, ``:``
#   where they would be ambiguous).
# * Time: the heading shows ``HH:MM:SS`` for people; the footer ends with ``| at <ISO 8601>``,
#   the full aware start time, which is what the parser reads. ``elapsed`` is kept to 0.1 s.
# * The provider's signed compaction block (``Summary.signed``) is one comment line after the
#   summary block (see ``signed``): plain ASCII JSON, ``<``/``>`` escaped, with the digest of the
#   readable summary it was written beside. Files without it read as before.
# * An agent framework's state (``Summary.framework_state``) is one comment line after those
#   (see ``framework_state``): the framework's name and its state as plain ASCII JSON, bounded
#   (a larger state is not written). Files without it read as before.
# * Truncation: a last block with no closing ``---`` (a crash mid-append) is ignored by
#   :func:`parse`, which returns the complete turns before it. The number of a "restored"
#   turn is not stored (it is always 0).

from __future__ import annotations

from rollchat.storage.transcript.parse import Head, parse, parse_head, parse_lenient
from rollchat.storage.transcript.render import (
    render,
    render_finalized,
    render_header,
    render_linked,
    render_resummarized,
    render_titled,
    render_totals,
    render_turn,
    totals_span,
)
from rollchat.storage.transcript.scan import (
    HEAD_BYTES,
    HEAD_MAX_BYTES,
    TAIL_BYTES,
    TAIL_MAX_BYTES,
    Glance,
    ReadAt,
    decode,
    glance,
    tail_summary,
)
from rollchat.storage.transcript.signed import SIGNED_MARK, signed_line, summary_digest
from rollchat.storage.transcript.summary import (
    FALLBACK_NOTE,
    parse_summary_body,
    render_summary_block,
    unplaced_lines,
)
from rollchat.storage.transcript.syntax import SUMMARY_END, SUMMARY_START

__all__ = [
    "FALLBACK_NOTE",
    "HEAD_BYTES",
    "HEAD_MAX_BYTES",
    "SIGNED_MARK",
    "SUMMARY_END",
    "SUMMARY_START",
    "TAIL_BYTES",
    "TAIL_MAX_BYTES",
    "Glance",
    "Head",
    "ReadAt",
    "decode",
    "glance",
    "parse",
    "parse_head",
    "parse_lenient",
    "parse_summary_body",
    "render",
    "render_finalized",
    "render_header",
    "render_linked",
    "render_resummarized",
    "render_summary_block",
    "render_titled",
    "render_totals",
    "render_turn",
    "signed_line",
    "summary_digest",
    "tail_summary",
    "totals_span",
    "unplaced_lines",
]
