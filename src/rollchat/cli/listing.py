"""What ``rollchat sessions`` and ``rollchat search`` print (their typer commands are in
cli/sessions.py), and the same command lines answered before typer is imported (``answered``,
called by __main__): listing and searching 10,000 sessions is timed (bench/bench_listing.py)."""

from __future__ import annotations

import json
import re

TYPE_CHECKING = False  # (typing itself is not imported on the way to a listing)
if TYPE_CHECKING:
    from pathlib import Path

    from rollchat.storage.listing import SessionInfo

_JSON_SURROGATE = re.compile(r"[\ud800-\udfff]")  # written as \u escapes: the JSON stays exact
_VALUED = ("--sessions-dir", "--config", "--limit")
_FLAGS = {"sessions": ("--json", "--all"), "search": ("--json",)}
# the record of the resolved sessions directory (config.recall), beside the index
RECORD_PARTS = (".cache", "listing", "config-record")
MORE_HINT = "'rollchat sessions --all' lists them all, '--limit N' the N most recent"


def show_sessions(directory: Path, limit: int | None, *, as_json: bool) -> None:
    """Print the ``limit`` most recent sessions (None: all) as ``rollchat sessions`` does, in
    a table or (``as_json``) as JSON with each one's costs. RollchatError, with nothing
    printed, when the sessions directory or its index cannot be read."""
    from rollchat.storage.index import SessionIndex

    index = SessionIndex(directory)
    page = index.page(limit)
    if as_json:
        # they and their ancestors by id, for the chain costs
        lineage = {s.session_id: s for s in index.lineage(page.sessions)}
        _json({
            "sessions": [
                {"number": i.number, "id": i.session_id, "file": i.file_name, "agent": i.agent,
                 "title": i.title,
                 "date": i.date.isoformat(), "queries": i.queries, "tokens": i.tokens,
                 "tokens_exact": i.tokens_exact, "context_tokens": i.context_tokens,
                 "first_query": i.first_query_preview, "has_summary": i.has_summary,
                 "parent": i.resumed_from, "forked": i.forked,
                 "continued_in": list(i.continued_in), "summary_problem": i.summary_problem,
                 **_costs(i, lineage)}
                for i in page.sessions
            ],
            "problems": [{"file": name, "reason": why} for name, why in page.problems],
            "total": page.total,
        })
        return
    from rollchat.ui.render import output_renderer
    from rollchat.ui.table import more_line

    out = output_renderer()
    out.sessions(page.sessions, page.problems)
    more = more_line(page, MORE_HINT)
    if more:
        out.dim(more)


def show_hits(directory: Path, query: str, limit: int, *, as_json: bool) -> None:
    """Print the sessions matching ``query`` as ``rollchat search`` does, best first.
    RollchatError, with nothing printed, when there is no word to look for or the index
    cannot be read."""
    from rollchat.storage.index import SessionIndex

    hits = SessionIndex(directory).search(query, limit)
    if as_json:
        _json([{"id": h.session_id, "title": h.title, "date": h.date.isoformat(),
                "snippet": h.text, "matched": h.matched, "number": h.number} for h in hits])
        return
    from rollchat.ui.render import output_renderer
    from rollchat.ui.table import ROW_INDENT, hit_rows

    out = output_renderer()
    if not hits:
        out.info(f"No saved session matches {query!r}.")
    for hit in hits:
        for row in hit_rows(hit, out.terminal):
            out.line(*row, hang=ROW_INDENT)


def _json(value: object) -> None:
    """``value`` as JSON on stdout, exact: a lone surrogate (a file name that is not UTF-8)
    is a \\u escape."""
    print(_JSON_SURROGATE.sub(lambda m: f"\\u{ord(m[0]):04x}",
                              json.dumps(value, indent=2, ensure_ascii=False)))


def _costs(info: SessionInfo, sessions: dict[str, SessionInfo]) -> dict[str, float | None]:
    """A listed session's cost in dollars and its chain's (itself and the sessions it
    continues: the known costs summed); null when no price was known."""
    from rollchat.models.prices import chain_of

    chain = chain_of(info, sessions)
    return {"cost": None if info.cost is None else round(info.cost, 6),
            "chain_cost": round(chain.spent, 6) if chain.known else None}


# ---------------------------------------------------------------- before typer


def answered(command: str, args: list[str]) -> bool:
    """Whether ``rollchat sessions|search ARGS`` was answered here, as the typer command
    answers it: only the command's own options (``--sessions-dir``, ``--config``, ``--json``,
    ``--limit N``, and ``--all`` for ``sessions``), a config with nothing to warn about and no
    error. Anything else (``--help``, a bad option or value, an error to report) is left to
    typer, which says what is wrong."""
    parsed = _parsed(args, _FLAGS[command])
    if parsed is None:
        return False
    given, flags, words = parsed
    limit = given.get("--limit")
    if (bool(words) != (command == "search") or ("--all" in flags and limit is not None)
            or (limit is not None and not (limit.isascii() and limit.isdigit() and int(limit)))):
        return False
    from rollchat.errors import RollchatError
    from rollchat.storage.listing import DEFAULT_LIMIT

    try:
        directory = _sessions_dir(given)
        if directory is None:
            return False
        _warnings_to_log()
        if command == "search":
            show_hits(directory, " ".join(words), int(limit or DEFAULT_LIMIT),
                      as_json="--json" in flags)
        else:
            show_sessions(directory, None if "--all" in flags else int(limit or DEFAULT_LIMIT),
                          as_json="--json" in flags)
    except RollchatError:
        return False
    return True


def _parsed(args: list[str], known_flags: tuple[str, ...],
            ) -> tuple[dict[str, str], set[str], list[str]] | None:
    """The options given (the last of each), the flags and the words; None for a command
    line this does not answer (an unknown option, ``--``, a value missing or that starts with
    a dash, as click would read it otherwise or fail)."""
    given: dict[str, str] = {}
    flags: set[str] = set()
    words: list[str] = []
    index = 0
    while index < len(args):
        word = args[index]
        name, eq, value = word.partition("=")
        if word in known_flags:
            flags.add(word)
        elif word in _VALUED or (name in _VALUED and eq):
            if not eq:  # the next word is its value
                index += 1
                name, value = word, args[index] if index < len(args) else ""
            if not value or value.startswith("-"):
                return None
            given[name] = value
        elif word.startswith("-"):
            return None
        else:
            words.append(word)
        index += 1
    return given, flags, words


def _sessions_dir(given: dict[str, str]) -> Path | None:
    """The sessions directory the config and the options name: recalled when nothing it was
    resolved from changed (config.recall: no loader, no dataclasses, no platformdirs), else
    loaded as the typer command loads it (cli/options.command_config) and remembered. None
    when the config has something to warn about (the typer command says it); ConfigError when
    it is wrong."""
    import os
    from pathlib import Path

    from rollchat.config.recall import recall

    options = {k: v for k, v in given.items() if k in ("--sessions-dir", "--config")}
    # where the record is when the sessions directory is not set in a config file (a guess:
    # a record is used only when its fingerprint and files match, wherever it was found)
    guess = os.path.join(os.getcwd(), os.path.expanduser(
        given.get("--sessions-dir") or os.environ.get("ROLLCHAT_SESSIONS_DIR") or "sessions"))
    values = recall(os.path.join(guess, *RECORD_PARTS), options)
    if values is not None and "sessions_dir" in values:
        return Path(values["sessions_dir"])
    return _loaded(options)


def _loaded(options: dict[str, str]) -> Path | None:
    """``_sessions_dir`` with the configuration loaded; the record written beside the index
    (in an existing sessions directory only) when nothing in it is to be warned about."""
    import contextlib
    import os

    from rollchat.config.recall import load_recordable, remember

    cfg, files = load_recordable(options)
    if cfg.warnings:
        return None
    directory = cfg.session.dir
    if files is not None and directory.is_dir():
        folder = str(directory)
        for part in RECORD_PARTS[:-1]:  # (owner-only, as the compaction cache's)
            folder = os.path.join(folder, part)
            with contextlib.suppress(OSError):
                os.mkdir(folder, 0o700)
        remember(os.path.join(folder, RECORD_PARTS[-1]), options, files,
                 {"sessions_dir": str(directory)})
    return directory


def _warnings_to_log() -> None:
    """Python's warnings to the log file, as on the typer way (cli/logs.py), set up at the
    first one: setting it up is 50 ms of imports that a listing does not need otherwise."""
    import warnings

    def first(*args: object, **kwargs: object) -> None:
        from rollchat.cli.logs import log_to_file

        log_to_file()  # (logging's own showwarning replaces this one)
        warnings.showwarning(*args, **kwargs)  # type: ignore[arg-type]

    warnings.showwarning = first
