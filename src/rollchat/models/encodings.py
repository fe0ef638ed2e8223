"""tiktoken encodings loaded through a cache of their parsed tables: tiktoken reads its
encoding file as 100,000 base64 lines at each start (about half of the load, and the load is
most of a one-shot run's time: bench/bench_cli.py), marshal reads the table in a tenth of that.
cl100k_base and o200k_base come from the files vendored in models/data (sha256 checked), so
they need no network; the others from tiktoken (which may download them)."""

from __future__ import annotations

import contextlib
import marshal
import os
from pathlib import Path
from typing import Any

CACHE_VERSION = 1
MIN_RANKS = 1_000  # a table smaller than this is not one tiktoken wrote

# Vendored BPE files (models/data/README.md says where they come from): name -> (file, the
# sha256 tiktoken pins for it, its split pattern and special tokens as tiktoken_ext's
# openai_public.py defines them; tiktoken is MIT-licensed).
_ENDOFTEXT, _ENDOFPROMPT = "<|endoftext|>", "<|endofprompt|>"
VENDORED: dict[str, tuple[str, str, str, dict[str, int]]] = {
    "cl100k_base": (
        "cl100k_base.tiktoken",
        "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
        r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+|"""
        r""" ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s""",
        {_ENDOFTEXT: 100257, "<|fim_prefix|>": 100258, "<|fim_middle|>": 100259,
         "<|fim_suffix|>": 100260, _ENDOFPROMPT: 100276}),
    # gpt-4o, gpt-4.1, the o-series and the gpt-5 family (tiktoken.model's table)
    "o200k_base": (
        "o200k_base.tiktoken",
        "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
        "|".join((
            r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+"""
            r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
            r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*"""
            r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
            r"""\p{N}{1,3}""",
            r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
            r"""\s*[\r\n]+""",
            r"""\s+(?!\S)""",
            r"""\s+""")),
        {_ENDOFTEXT: 199999, _ENDOFPROMPT: 200018}),
}


def vendored(name: str, directory: Path | None = None) -> Any:
    """The encoding ``name`` built with tiktoken's documented constructor from the vendored
    file, after checking its sha256; ValueError when the file's hash differs, KeyError when
    ``name`` is not vendored."""
    import hashlib

    import tiktoken
    from tiktoken.load import load_tiktoken_bpe

    file_name, digest, pat_str, special = VENDORED[name]
    path = (directory or Path(__file__).parent / "data") / file_name
    if hashlib.sha256(path.read_bytes()).hexdigest() != digest:
        raise ValueError(f"{path} is not the {name} table (its sha256 differs)")
    ranks = load_tiktoken_bpe(str(path))
    return tiktoken.Encoding(name, pat_str=pat_str, mergeable_ranks=ranks,
                             special_tokens=special)


def cache_dir() -> Path:
    """``<user cache dir>/rollchat/encodings``."""
    import platformdirs

    return Path(platformdirs.user_cache_dir("rollchat")) / "encodings"


def load(name: str, directory: Path | None = None) -> Any:
    """The tiktoken encoding ``name``: from the cache when it holds a valid table written by
    this version of tiktoken, else loaded by tiktoken (raising as it does) and cached. A cache
    that cannot be read or written only costs the time it would have saved."""
    import tiktoken

    path = (directory or cache_dir()) / f"{name}-{tiktoken.__version__}-{CACHE_VERSION}.marshal"
    table = _read(path, name)
    if table is not None:
        pat_str, ranks, special = table
        with contextlib.suppress(Exception):  # tiktoken refuses a table of the wrong types
            return tiktoken.Encoding(name, pat_str=pat_str, mergeable_ranks=ranks,
                                     special_tokens=special)
    encoding = vendored(name) if name in VENDORED else tiktoken.get_encoding(name)
    _write(path, (encoding.name, encoding._pat_str, encoding._mergeable_ranks,
                  encoding._special_tokens))
    return encoding


def _read(path: Path, name: str) -> tuple[str, dict[bytes, int], dict[str, int]] | None:
    """The cached (pattern, ranks, special tokens) of ``name``, or None (none, or not of this
    shape: marshal builds values only; tiktoken checks the types of the items as it takes
    them, which checking them here again would take a third of the time saved)."""
    try:
        with open(path, "rb") as f:
            value = marshal.loads(f.read())  # (load(f) reads it in small pieces: 4x slower)
    except (OSError, EOFError, ValueError, TypeError):
        return None
    if not (isinstance(value, tuple) and len(value) == 4 and value[0] == name):
        return None
    _, pat_str, ranks, special = value
    if not (isinstance(pat_str, str) and isinstance(ranks, dict) and len(ranks) >= MIN_RANKS
            and isinstance(special, dict)):
        return None
    return pat_str, ranks, special


def _write(path: Path, value: tuple[Any, ...]) -> None:
    """Write the table atomically (a temporary file renamed), readable by the user only."""
    import tempfile

    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=".", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                marshal.dump(value, f)
            os.replace(temporary, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise
