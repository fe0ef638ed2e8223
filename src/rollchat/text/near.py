"""Near-duplicate lookup without comparing every pair: an index over the items' word sets that
yields the few candidates `phrases.near_duplicates` can hold for, then checks only those."""

# Comparing each new item with every kept one made the local summary quadratic (8,000 turns
# took 104 s). The index finds exactly the slot a scan in order would find, by the two halves
# of the test, with the words of each key ordered rarest first (counted over every key the
# index will see, given up front) and a word only one key has ("single") never shared:
# (1) one key holds the other, two words at least: a superset of ``key`` holds its rarest
#     word (and ``key`` has no single word); a subset of ``key`` (no single word either) is
#     filed under its own rarest word, which is then a word of ``key``;
# (2) they mostly overlap, o = |a & b| >= 0.75 |a | b|: then o >= ceil(0.75 |x|) for both,
#     so the first word they share is among the first m - ceil(0.75 |x|) + 1 shared-able
#     words of each (m of them; prefix filtering), and from the positions i and j of that
#     word, o <= 1 + min(m_a - i - 1, m_b - j - 1), which rules out whole groups of keys at
#     once (keys filed by word, position, size and m): many items made from one template
#     ("we should use `x_1` for it", "... `x_2` ...") share every word but one and are not
#     near-duplicates, and are never compared.
# When every word is common (phrases drawn from a small vocabulary), the prefix words of a key
# are held by most keys and (2) rules out few: each lookup is then bounded, LOOK_AT candidates
# at most, and a superset looked for among the first LOOK_AT keys holding the rarest word.
# The candidates looked at first are the likeliest: keys in one of the key's MinHash buckets
# (BANDS bands of ROWS minima of a fixed hash of the words; a key overlapping by 0.75 shares a
# bucket with odds 1 - (1 - 0.75 ** ROWS) ** BANDS, 99.8%; one overlapping by a quarter,
# 6%), then the prefix groups, smallest first. The answer is the scan's whenever a key has
# fewer candidates than LOOK_AT, as in every real session measured; past it, a near-duplicate
# outside the candidates looked at is not found (the item is kept: bench/bench_scale.py).

from __future__ import annotations

from bisect import insort
from collections import Counter
from collections.abc import Callable, Iterable
from functools import lru_cache
from hashlib import blake2b
from itertools import islice

Key = frozenset[str]
_Shape = tuple[int, int, int]  # the position of a word in a key's prefix, its size and m


LOOK_AT = 128  # candidates compared at most per lookup (see above)
ROWS, BANDS = 4, 16  # MinHash: BANDS buckets per key, each of ROWS minima


@lru_cache(maxsize=4096)  # 64 ints a word: about 10 MB when full
def _word_hashes(word: str) -> tuple[int, ...]:
    """ROWS * BANDS fixed 32-bit hashes of ``word`` (the same in every process)."""
    data = word.encode("utf-8", "surrogatepass")
    raw = b"".join(blake2b(data, digest_size=64, salt=bytes([n]) * 16).digest()
                   for n in range(ROWS * BANDS * 4 // 64))
    return tuple(int.from_bytes(raw[i:i + 4], "little") for i in range(0, len(raw), 4))


def _buckets(key: Key) -> list[tuple[int, tuple[int, ...]]]:
    """The MinHash buckets of a non-empty ``key``: (band, its ROWS minima)."""
    minima = tuple(map(min, zip(*(_word_hashes(w) for w in key), strict=True)))
    return [(band, minima[band * ROWS:(band + 1) * ROWS]) for band in range(BANDS)]


def _needed(size: int) -> int:
    """The fewest shared words a near-duplicate of a key of ``size`` words has."""
    return (3 * size + 3) // 4  # ceil(0.75 * size)


def _may_overlap(i: int, size: int, shared: int, shape: _Shape) -> bool:
    """Whether keys whose first shared word sits at ``i`` and at ``shape``'s position can
    overlap by 0.75 of their union, at most."""
    j, other, other_shared = shape
    most = 1 + min(shared - i - 1, other_shared - j - 1)
    return 4 * most >= 3 * (size + other - most)


class NearIndex:
    """Keys in slots (0, 1, ...); ``find(key)`` is the first slot whose key is a near-duplicate
    of ``key`` by ``same``, as a scan of every slot in order would find. ``keys`` are all the
    keys the index will be given (counted, so that words can be ordered rarest first)."""

    def __init__(self, same: Callable[[Key, Key], bool], keys: Iterable[Key]) -> None:
        self._same = same
        self._known: Counter[Key] = Counter(keys)
        self._count: Counter[str] = Counter()
        for key, times in self._known.items():
            for word in key:
                self._count[word] += times
        self._keys: list[Key] = []
        self._holding: dict[str, list[int]] = {}  # word -> slots that held it, ascending
        self._anchor: dict[str, set[int]] = {}  # word -> subset candidates filed under it
        self._prefix: dict[str, dict[_Shape, set[int]]] = {}  # word -> shape -> slots
        self._bucket: dict[tuple[int, tuple[int, ...]], set[int]] = {}  # MinHash -> slots
        # what a key's lookups and filings need of it, worked out once a key (the counts
        # are final once given): its shareable words in order, its MinHash buckets
        self._ordered: dict[Key, list[str]] = {}
        self._hashed: dict[Key, list[tuple[int, tuple[int, ...]]]] = {}

    def _shareable(self, key: Key) -> list[str]:
        """The words of ``key`` another key may share (no single word), rarest first."""
        words = self._ordered.get(key)
        if words is None:
            if key not in self._known:
                raise ValueError("NearIndex was not given this key up front")
            words = self._ordered[key] = sorted((w for w in key if self._count[w] > 1),
                                                key=lambda w: (self._count[w], w))
        return words

    def _buckets(self, key: Key) -> list[tuple[int, tuple[int, ...]]]:
        buckets = self._hashed.get(key)
        if buckets is None:
            buckets = self._hashed[key] = _buckets(key)
        return buckets

    def _places(self, key: Key) -> list[set[int]]:
        """The sets ``key``'s slot is filed in (subset anchor, overlap prefix)."""
        words = self._shareable(key)
        places = []
        if len(key) >= 2 and len(words) == len(key):
            places.append(self._anchor.setdefault(words[0], set()))
        for j, word in enumerate(words[:len(words) - _needed(len(key)) + 1]):
            shapes = self._prefix.setdefault(word, {})
            places.append(shapes.setdefault((j, len(key), len(words)), set()))
        if key:
            places.extend(self._bucket.setdefault(b, set()) for b in self._buckets(key))
        return places

    def add(self, key: Key) -> int:
        """File ``key`` in a new slot (an empty key is kept but never matches) and return it."""
        self._keys.append(key)
        slot = len(self._keys) - 1
        for place in self._places(key):
            place.add(slot)
        for word in key:
            self._holding.setdefault(word, []).append(slot)
        return slot

    def replace(self, slot: int, key: Key) -> None:
        """Put ``key`` in ``slot`` in place of the key there."""
        old = self._keys[slot]
        for place in self._places(old):
            place.discard(slot)
        self._keys[slot] = key
        for place in self._places(key):
            place.add(slot)
        for word in key - old:  # the old key's lists are checked when read
            insort(self._holding.setdefault(word, []), slot)

    def _first_superset(self, key: Key, rarest: str) -> int | None:
        for slot in islice(self._holding.get(rarest, ()), LOOK_AT):
            if key <= self._keys[slot]:
                return slot
        return None

    def find(self, key: Key) -> int | None:
        """The first slot holding a near-duplicate of ``key`` (never one for an empty key)."""
        if not key:
            return None
        words = self._shareable(key)
        found = self._first_superset(key, words[0]) \
            if len(key) >= 2 and len(words) == len(key) else None
        prefix: list[set[int]] = [self._anchor[w] for w in words if w in self._anchor]
        for i, word in enumerate(words[:len(words) - _needed(len(key)) + 1]):
            prefix.extend(slots for shape, slots in self._prefix.get(word, {}).items()
                          if _may_overlap(i, len(key), len(words), shape))
        if sum(map(len, prefix)) <= LOOK_AT:
            candidates = set().union(*prefix)  # every candidate: the scan's answer
        else:
            candidates = set()
            likeliest = [self._bucket.get(b, set()) for b in self._buckets(key)]
            for slots in [*likeliest, *sorted(prefix, key=len)]:
                candidates.update(islice(slots, LOOK_AT - len(candidates)))
                if len(candidates) >= LOOK_AT:
                    break
        for slot in sorted(candidates):  # the first that is one is the answer
            if found is not None and slot > found:
                break
            if self._same(key, self._keys[slot]):
                return slot
        return found
