"""A session file read as a stream of lines: its header, then one turn at a time, then its
summary, holding one turn block in memory (``rollchat show`` of a session of any size). Reads
what ``parse_lenient`` reads; only TranscriptError escapes."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import BinaryIO

from rollchat.domain import SessionHeader, Summary, Turn
from rollchat.errors import TranscriptError
from rollchat.storage.transcript.parse import (
    _BREAK_FIRST,
    _HEADER_LINE,
    _header,
    _heading,
    _summary,
)
from rollchat.storage.transcript.syntax import SUMMARY_END, SUMMARY_START
from rollchat.storage.transcript.turn_block import parse_turn

HEADER_LINES = 1000  # a header longer than this is not a session file's
SUMMARY_BYTES = 16 * 1024 * 1024  # what follows the summary marker (summary, signed block)
_CHUNK = 64 * 1024  # bytes read at once (lines split and decoded together)
_LINE_NO = re.compile(r"line ([0-9]+)")


def file_lines(f: BinaryIO) -> Iterator[str]:
    """The lines of a file as ``text.split("\\n")`` gives them (a last "" after a final
    newline), each decoded as strict UTF-8 (TranscriptError when one is not, after the lines
    before it). Read and decoded a chunk of whole lines at a time: a call per line cost more
    than the reading (seconds for a file of millions of lines)."""
    number = 0  # lines yielded so far
    pending: list[bytes] = []  # the start of a line not yet ended
    while chunk := f.read(_CHUNK):
        cut = chunk.rfind(b"\n")
        if cut < 0:  # a line longer than a chunk: its pieces joined once it ends
            pending.append(chunk)
            continue
        pending.append(chunk[:cut])
        data = b"".join(pending)
        pending = [chunk[cut + 1:]]
        yield from _decoded(data, number)
        number += data.count(b"\n") + 1
    yield from _decoded(b"".join(pending), number)


def _decoded(data: bytes, before: int) -> Iterator[str]:
    """The lines of ``data`` (whole lines, without the last one's newline) decoded; at a line
    that is not UTF-8, TranscriptError naming it (``before`` lines came first)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        start = data.rfind(b"\n", 0, e.start) + 1  # the first byte of the line
        if start:
            yield from data[:start - 1].decode("utf-8").split("\n")
        number = before + data.count(b"\n", 0, start) + 1
        raise TranscriptError(f"line {number}: not UTF-8 text, not a session") from None
    yield from text.split("\n")


class TranscriptStream:
    """``header`` read at once; ``turns()`` yields each turn as its block is read; once they
    are read, ``summary`` is the file's summary block (None: none, or corrupted: then
    ``summary_dropped``)."""

    def __init__(self, lines: Iterable[str]) -> None:
        self._lines = iter(lines)
        self._number = 0  # the number of the last line read
        self.summary: Summary | None = None
        self.summary_dropped = False
        self.header = self._read_header()

    def _next(self) -> str | None:
        line = next(self._lines, None)
        if line is not None:
            self._number += 1
        return line

    def _read_header(self) -> SessionHeader:
        first = self._next()
        if first is None or not (first.startswith("# ") and first.endswith(" Conversation")):
            raise TranscriptError("line 1: not a session file (expected '# <Agent> Conversation')")
        fields: dict[str, str] = {}
        while (line := self._next()) is not None and self._number <= HEADER_LINES:
            if line == "---":
                try:
                    return _header(fields)
                except TranscriptError:
                    raise
                except Exception as e:  # any input: only our own error type escapes
                    raise TranscriptError(f"not a readable session header: {e}") from None
            if line == "":
                continue
            m = _HEADER_LINE.match(line)
            if m is None:
                raise TranscriptError(f"line {self._number}: unexpected line in the header: "
                                      f"{line[:60]!r}")
            fields[m[1]] = m[2] or ""
        raise TranscriptError("the header is not terminated by a '---' line")

    def turns(self) -> Iterator[Turn]:
        """Each complete turn in order; a last block cut short (a crash mid-append) is left
        out, as ``parse`` leaves it."""
        blank = False
        while (line := self._next()) is not None:
            if line == "":
                blank = True
                continue
            if _heading(line):
                turn = self._turn(line)
                if turn is None:
                    return
                yield turn
            elif line == SUMMARY_START:
                self._read_summary()
                return
            elif line == SUMMARY_END:
                self._dropped(line)
                return
            else:
                number = self._number
                if self._next() is None and blank:
                    return  # a torn last line (crash mid-append): ignored like a cut block
                raise TranscriptError(f"line {number}: unexpected line: {line[:60]!r}")
            blank = False

    def _turn(self, heading: str) -> Turn | None:
        start = number = self._number
        block = [heading]
        for line in self._lines:  # (the loop of most of the file: no call per line)
            number += 1
            if line[:1] not in _BREAK_FIRST:  # (most lines: a text's, a result's)
                block.append(line)
                continue
            if line == "---":
                self._number = number
                block.append(line)
                try:
                    return parse_turn(block, 0, len(block) - 1)
                except TranscriptError as e:
                    raise TranscriptError(_LINE_NO.sub(
                        lambda m: f"line {int(m[1]) + start - 1}", str(e), count=1)) from None
                except Exception as e:  # any input: only our own error type escapes
                    raise TranscriptError(f"line {start}: not a valid turn: {e}") from None
            if line in (SUMMARY_START, SUMMARY_END):  # parse_lenient cuts the file there
                self._number = number
                self._dropped(line)
                return None
            if line[:3] == "## " and _heading(line):
                raise TranscriptError(f"line {start}: turn block not closed by '---'")
            block.append(line)
        self._number = number
        return None  # cut short at the end of the file

    def _read_summary(self) -> None:
        rest = [SUMMARY_START]
        size = 0
        while (line := self._next()) is not None:
            size += len(line) + 1
            if size > SUMMARY_BYTES:
                self.summary_dropped = True
                return
            rest.append(line)
        try:
            self.summary = _summary(rest, 0)
        except TranscriptError:
            self.summary_dropped = True
        except Exception:  # any input: a summary that cannot be read is dropped
            self.summary_dropped = True

    def _dropped(self, line: str) -> None:
        """The file is cut at a marker out of place (``line``), as ``parse_lenient`` cuts it:
        its summary is dropped when a summary start marker is there or further on."""
        while line != SUMMARY_START and (following := self._next()) is not None:
            line = following
        self.summary_dropped = line == SUMMARY_START
