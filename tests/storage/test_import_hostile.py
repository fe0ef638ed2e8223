"""The import on broken and hostile input: real files cut anywhere or with their values
swapped for other JSON types, and arbitrary JSON in each format's shape. Whatever comes in,
the answer is turns or rollchat's own UsageError, never a crash."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rollchat.errors import UsageError
from rollchat.storage.imports import read_transcript
from tests.examples_budget import examples

REAL = Path(__file__).parent.parent / "fixtures" / "real"
SERVERS = ("llama_cpp", "ollama", "vllm")  # model servers' bytes (wire_local.py): no sessions
SMALL = sorted(p for p in REAL.rglob("*") if p.is_file() and p.name != "PROVENANCE.md"
               and p.stat().st_size < 80_000 and p.relative_to(REAL).parts[0] not in SERVERS)
JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False)
                    | st.text(max_size=30),
                    lambda inner: st.lists(inner, max_size=4)
                    | st.dictionaries(st.text(max_size=12), inner, max_size=4), max_leaves=12)


def survives(data: bytes) -> None:
    try:
        got = read_transcript(data, "f")
    except UsageError:
        return
    for turn in got.turns:
        assert isinstance(turn.user, str) and isinstance(turn.blocks, tuple)


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(SMALL), st.floats(0, 1), st.floats(0, 1))
def test_a_real_file_cut_anywhere(path: Path, start: float, end: float) -> None:
    data = path.read_bytes()
    a, b = sorted((int(start * len(data)), int(end * len(data))))
    survives(data[:b])
    survives(data[a:])
    survives(data[:a] + data[b:])


def _swap(value: Any, seed: list[Any]) -> Any:
    """``value`` with every leaf and object replaced, in turn, by the next of ``seed``."""
    if isinstance(value, dict):
        return {k: (seed.pop() if seed and len(seed) % 3 == 0 else _swap(v, seed))
                for k, v in value.items()}
    if isinstance(value, list):
        return [_swap(v, seed) for v in value]
    return seed.pop() if seed else value


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from([p for p in SMALL if p.suffix in (".jsonl", ".json")]),
       st.lists(JSON, min_size=1, max_size=40))
def test_a_real_file_with_values_of_other_types(path: Path, seed: list[Any]) -> None:
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".json":
        survives(json.dumps(_swap(json.loads(text), list(seed))).encode())
        return
    rows = [json.loads(line) for line in text.splitlines() if line.strip()]
    survives("\n".join(json.dumps(_swap(r, list(seed))) for r in rows).encode())


@settings(max_examples=examples(200), deadline=None)
@given(JSON, st.sampled_from(["claude", "codex", "gemini", "llm"]))
def test_arbitrary_json_in_each_formats_shape(value: Any, shape: str) -> None:
    documents = {
        "claude": {"type": "user", "message": {"role": "user", "content": value}},
        "codex": {"type": "response_item", "payload": value},
        "gemini": {"sessionId": "s", "startTime": value, "messages": [value, {"type": "gemini",
                   "content": value, "toolCalls": [value]}]},
        "llm": [{"prompt": value, "response": value, "conversation_id": value,
                 "tool_calls": [value], "tool_results": value}],
    }
    survives(json.dumps(documents[shape]).encode())
    survives((json.dumps(documents[shape]) + "\n" + json.dumps(value)).encode())
