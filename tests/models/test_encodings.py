"""tiktoken encodings through the cache of their parsed tables (models/encodings.py): the same
tokens as tiktoken's own load, the cache used once written, and a cache that is damaged or
not ours ignored and written again."""

from __future__ import annotations

import marshal
from pathlib import Path

import pytest
import tiktoken

from rollchat.models import encodings

NAME = "cl100k_base"
TEXTS = ["hello world", "a token bucket in Redis", "日本語のテキスト 🎉", "<|endoftext|> x",
         "def f(x):\n    return x ** 2\n"]


def cached_file(directory: Path) -> Path:
    [path] = directory.glob(f"{NAME}-*.marshal")
    return path


def tiktokens_own(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                  name: str = NAME) -> tiktoken.Encoding:
    """``NAME`` as tiktoken's own loader builds it (its registry, its pattern and special
    tokens, its check of the file's hash), fed the vendored file through tiktoken's documented
    download cache (TIKTOKEN_CACHE_DIR, the file named by the sha1 of its URL): there is no
    network here."""
    import hashlib
    import shutil

    from tiktoken import registry

    cache = tmp_path / "tiktoken-cache"
    cache.mkdir()
    url = f"https://openaipublic.blob.core.windows.net/encodings/{name}.tiktoken"
    shutil.copy(Path(encodings.__file__).parent / "data" / f"{name}.tiktoken",
                cache / hashlib.sha1(url.encode()).hexdigest())
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(cache))
    monkeypatch.setattr(registry, "ENCODINGS", {})
    return tiktoken.get_encoding(name)


def test_the_cached_table_encodes_as_tiktoken_does(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    plain = tiktokens_own(tmp_path, monkeypatch)
    first = encodings.load(NAME, tmp_path)  # loaded by tiktoken, then cached
    second = encodings.load(NAME, tmp_path)  # from the cache
    for text in TEXTS:
        expected = plain.encode(text, disallowed_special=())
        assert first.encode(text, disallowed_special=()) == expected
        assert second.encode(text, disallowed_special=()) == expected
    assert second.name == NAME and second.n_vocab == plain.n_vocab


def test_the_vendored_o200k_base_is_tiktokens_own(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """The vendored o200k_base (gpt-4o and later) is built as tiktoken builds it: the same
    pattern, special tokens and ranks, so the same tokens (tiktoken checks the file against
    its own pinned hash too)."""
    plain = tiktokens_own(tmp_path, monkeypatch, "o200k_base")
    ours = encodings.vendored("o200k_base")
    assert (ours._pat_str, ours._special_tokens, ours.n_vocab) == (
        plain._pat_str, plain._special_tokens, plain.n_vocab)
    for text in TEXTS:
        assert ours.encode(text, disallowed_special=()) == plain.encode(
            text, disallowed_special=())
    assert ours.encode("hello world") == [24912, 2375]


def test_once_written_the_cache_is_what_is_read(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    encodings.load(NAME, tmp_path)
    assert cached_file(tmp_path).stat().st_mode & 0o077 == 0

    def refuse(name: str) -> None:
        raise AssertionError("tiktoken's own load was used")

    monkeypatch.setattr(tiktoken, "get_encoding", refuse)
    assert encodings.load(NAME, tmp_path).encode("hello world") == [15339, 1917]


@pytest.mark.parametrize("damage", [
    b"not marshal at all",
    marshal.dumps((NAME, "x", {b"a": 1}, {})),  # too small a table
    marshal.dumps((NAME, "x", {i: i for i in range(2000)}, {})),  # keys of the wrong type
    marshal.dumps(("another", "x", {}, {})),
])
def test_a_damaged_cache_is_ignored_and_written_again(tmp_path: Path, damage: bytes) -> None:
    encodings.load(NAME, tmp_path)
    path = cached_file(tmp_path)
    path.write_bytes(damage)
    assert encodings.load(NAME, tmp_path).encode("hello world") == [15339, 1917]
    assert marshal.loads(path.read_bytes())[0] == NAME  # written again, valid
    assert encodings.load(NAME, tmp_path).encode("hello world") == [15339, 1917]


def test_the_vendored_table_is_checked_by_its_hash(tmp_path: Path) -> None:
    from rollchat.models.encodings import VENDORED, vendored

    encoding = vendored("cl100k_base")
    assert encoding.encode("hello world") == [15339, 1917] and encoding.n_vocab == 100_277
    file_name = VENDORED["cl100k_base"][0]
    real = (Path(encodings.__file__).parent / "data" / file_name).read_bytes()
    (tmp_path / file_name).write_bytes(real.replace(b"IQ== 0", b"IQ== 1", 1))
    with pytest.raises(ValueError, match="sha256 differs"):
        vendored("cl100k_base", tmp_path)


def test_no_token_of_the_vendored_tables_is_longer_than_longest_token_chars() -> None:
    """What engine/hygiene's cut relies on to skip counting a result that cannot fit."""
    from rollchat.models.encodings import VENDORED, vendored
    from rollchat.models.tokens import LONGEST_TOKEN_CHARS

    for name in VENDORED:
        assert max(len(token) for token in vendored(name)._mergeable_ranks) <= LONGEST_TOKEN_CHARS
