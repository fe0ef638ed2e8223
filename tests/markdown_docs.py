"""Random markdown of the simplest kind (paragraphs, tight bullet lists, **strong** and `code`
words, markup glued to a word now and then): the documents the ``show`` tests compare with
what rich draws."""

from __future__ import annotations

import random
from collections.abc import Sequence


def document(rng: random.Random, words: Sequence[str], longest_run: int = 12) -> str:
    """One document of one to four blocks, drawn from ``rng``: runs of ``words`` (at most
    ``longest_run`` of them between markup)."""
    def run(n: int) -> str:
        return " ".join(rng.choice(words) for _ in range(n))

    def inline() -> str:
        parts = []
        for _ in range(rng.randint(1, 5)):
            r = rng.random()
            if r < 0.2:
                parts.append(f"**{run(rng.randint(1, 3))}**")
            elif r < 0.35:
                parts.append(f"`{rng.choice(['x', 'a_b', 'f(x)', 'a = b', 'x+1'])}`")
            else:
                parts.append(run(rng.randint(1, longest_run)))
        text = " ".join(parts)
        return text.replace(" ", "", 1) if rng.random() < 0.1 else text  # glued markup

    blocks = []
    for _ in range(rng.randint(1, 4)):
        if rng.random() < 0.4:
            blocks.append("\n".join("- " + inline() for _ in range(rng.randint(1, 3))))
        else:
            blocks.append(inline())
    return "\n\n".join(blocks)
