"""``rollchat import FILE``: another tool's transcript (see storage/imports for the formats)
saved as a rollchat session with a summary, so that ``resume`` continues work begun elsewhere."""

from __future__ import annotations

import contextlib
import os
import re
import stat
import sys
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from rollchat.cli.options import ConfigOpt, SessionsDirOpt, command_config, fail
from rollchat.errors import RollchatError, UsageError

if TYPE_CHECKING:
    from rollchat.config.settings import Config
    from rollchat.storage.imports import Imported

MAX_REPORTED = 20  # skipped lines named one by one; the rest counted
# what an import adds to the header's Imported From after "<format> <file name>": the source
# file's digest (a second import of the same bytes is refused) and when it was imported
_SOURCE = re.compile(r"\(sha256 ([0-9a-f]{64}), imported ([^()]*)\)\Z")


def _read(path: Path) -> bytes:
    """The file's bytes: a regular file, at most the store's size cap."""
    from rollchat.storage.store import MAX_FILE_BYTES

    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror}") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise UsageError(f"{path} is not a regular file")
    with os.fdopen(fd, "rb") as f:
        try:
            data = f.read(MAX_FILE_BYTES + 1)
        except OSError as exc:
            raise UsageError(f"cannot read {path}: {exc.strerror}") from None
    if len(data) > MAX_FILE_BYTES:
        raise UsageError(f"{path} is too large to import (limit {MAX_FILE_BYTES:,} bytes)")
    return data


def import_command(
    ctx: typer.Context,
    file: Annotated[Path, typer.Argument(help="A Claude Code or Codex session file (JSONL), a "
                                              "gemini-cli session, an aider chat history, "
                                              "'llm logs --json' output or a markdown chat.")],
    agent: Annotated[Optional[str], typer.Option(  # noqa: UP045 - typer needs Optional
        help="The agent that continues it (default: the config's).")] = None,
    local_summary: Annotated[bool, typer.Option(
        "--local-summary", help="Summarize locally (no model call).")] = False,
    again: Annotated[bool, typer.Option(
        "--again", help="Import a file already imported (another session).")] = False,
    sessions_dir: SessionsDirOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Import another tool's transcript as a session with a summary; 'resume ID' continues
    it. Malformed lines are reported by number and skipped. The same file again is refused
    (--again imports it anew)."""
    from rollchat.storage.imports import read_transcript

    cfg = command_config(ctx, config, sessions_dir, agent=agent, trust_warning=False)
    try:
        data = _read(file)
        imported = read_transcript(data, str(file))
    except UsageError as exc:
        fail(str(exc))
    import hashlib

    from rollchat.ui.sanitize import harmless

    digest = hashlib.sha256(data).hexdigest()
    if not again:
        _refuse_a_second_import(cfg.session.dir, file, digest)

    for number, why in imported.skipped[:MAX_REPORTED]:
        sys.stderr.write(harmless(f"rollchat: {file}: line {number}: {why}") + "\n")
    if len(imported.skipped) > MAX_REPORTED:
        sys.stderr.write(f"rollchat: {harmless(str(file))}: "
                         f"{len(imported.skipped) - MAX_REPORTED:,} more lines skipped\n")
    if not imported.turns:
        fail(f"{file}: no messages found in this {imported.format} file"
             f"{_holding(imported)}; nothing imported")
    try:
        session_id, note = _save(cfg, imported, file.name, digest, local=local_summary)
    except RollchatError as exc:
        fail(str(exc), 1)
    turns = len(imported.turns)
    print(harmless(f"Imported {turns:,} turn{'s' if turns != 1 else ''} from {file} "
                   f"({imported.format}) as session {session_id}{note}."))
    for line in _accounts(imported):
        print(harmless(line))
    print(f"Continue it with: rollchat --resume {session_id}   (or 'resume {session_id}' in "
          "the chat)")


def _refuse_a_second_import(sessions: Path, file: Path, digest: str) -> None:
    """Exit 1 (nothing written, no model called) when a session was imported from a file
    with these very bytes, found through the sessions index. An import that failed or was
    killed part-way (no summary: an import writes its summary last) does not count: its
    partial session is removed, so that the retry leaves one whole session."""
    from rollchat.storage.store import SessionStore
    from rollchat.ui.sanitize import harmless

    try:
        found = SessionStore(sessions).imported(f"(sha256 {digest},")
    except RollchatError as exc:
        fail(str(exc), 1)
    whole = [info for info in found if info.has_summary]
    if not whole:
        _remove_partial(sessions, [info.session_id for info in found])
        return
    earlier = whole[0]
    source = _SOURCE.search(earlier.imported_from or "")
    when = source[2] if source else f"{earlier.date:%Y-%m-%d %H:%M}"
    fail(harmless(f"{file} was already imported as {earlier.session_id} (on {when}); "
                  "use --again to import it anew"), 1)


def _remove_partial(sessions: Path, ids: list[str]) -> None:
    """Delete the sessions an earlier import of this file left unfinished; exit 1 when one
    is open in another process (that import is still under way)."""
    from rollchat.storage.store import SessionStore

    store = SessionStore(sessions)
    for session_id in ids:
        try:
            store.delete(session_id)
        except RollchatError as exc:
            fail(f"an earlier import of this file left session {session_id} unfinished, "
                 f"and it cannot be removed: {exc}", 1)
        sys.stderr.write(f"rollchat: removed session {session_id}, left unfinished by an "
                         "earlier import of this file\n")


def _save(cfg: Config, imported: Imported, file_name: str, digest: str, *,
          local: bool) -> tuple[str, str]:
    """Summarize the imported turns, then write the session (header, turns, summary, the
    source's digest); its id and a note on how it was summarized."""
    from rollchat.session.state import now
    from rollchat.storage.store import SessionStore

    agent, turns = cfg.agent, imported.turns
    if local:
        from rollchat.compaction.extractive import extractive_summary

        summary = extractive_summary(turns, parent_summary=None, focus=None,
                                     max_words=cfg.summary.max_words, fallback=False)
        note = ", summarized locally"
    else:  # the one path of a saved transcript's summary, as `compact` and resume take it
        from rollchat.compaction.saved import settled, summarize_saved, summary_model

        model = summary_model(cfg, os.environ)
        done = settled(summarize_saved(model.summarizer(), turns, None))
        summary = done.outcome.summary
        note = (f", summarized locally ({done.outcome.reason})" if done.outcome.fallback_used
                else f", summarized by {model.model}" + (" (its last part; the rest locally)"
                                                         if done.plan.cheap else ""))
    store = SessionStore(cfg.session.dir)
    source = f"(sha256 {digest}, imported {now():%Y-%m-%d %H:%M})"
    live = store.new_session(agent_key=agent.key, agent=agent.name, agent_path=agent.agent_path,
                             model=imported.model or "unknown", provider=imported.format,
                             now=turns[0].started, title=imported.title,
                             imported_from=f"{imported.format} {file_name} {source}",
                             entries=turns)  # one write, one fsync: not one per turn
    try:
        store.finalize(live.session_id, summary, total_queries=len(turns), total_tokens=0)
    except BaseException:  # nothing half-imported is left to block or confuse a retry
        live.close()
        with contextlib.suppress(RollchatError):
            store.delete(live.session_id)
        raise
    live.close()
    return live.session_id, note


def _counted(counts: Counter[str]) -> str:
    """``{"slash command": 2, "skill body": 2}`` as "2 slash commands, 2 skill bodies", largest
    first (the plural is the last word's)."""
    def many(what: str) -> str:
        head, _, last = what.rpartition(" ")
        last = (last[:-1] + "ies" if last.endswith("y") and last[-2:-1] not in "aeiou"
                else last if last.endswith("s") else last + "s")
        return f"{head} {last}".strip()

    return ", ".join(f"{n:,} {what if n == 1 else many(what)}" for what, n in counts.most_common())


def _holding(imported: Imported) -> str:
    """What a file with no prompt or answer held, for the message that refuses it."""
    held = imported.folded + imported.left_out
    return f" (only the tool's own lines: {_counted(held)})" if held else ""


def _accounts(imported: Imported) -> list[str]:
    """The lines that say what the import folded into notes and what it left out."""
    lines = []
    if imported.side_chain is not None:
        lines.append(f"This is the side chain of sub-agent {imported.side_chain}: its prompts "
                     "are the ones the main agent gave it.")
    if imported.folded:
        lines.append(f"Folded the tool's own lines (notes where they matter): "
                     f"{_counted(imported.folded)}.")
    if imported.left_out:
        lines.append(f"Left out: {_counted(imported.left_out)}.")
    return lines
