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


def test_the_cached_table_encodes_as_tiktoken_does(tmp_path: Path) -> None:
    plain = tiktoken.get_encoding(NAME)
    first = encodings.load(NAME, tmp_path)  # loaded by tiktoken, then cached
    second = encodings.load(NAME, tmp_path)  # from the cache
    for text in TEXTS:
        expected = plain.encode(text, disallowed_special=())
        assert first.encode(text, disallowed_special=()) == expected
        assert second.encode(text, disallowed_special=()) == expected
    assert second.name == NAME and second.n_vocab == plain.n_vocab


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
