"""Unknown context windows: a server that refuses a request as too long teaches the session its
real window (stated, or guessed by halving), the session compacts and sends once more, the
window is remembered per model and base URL, and no oversized request is ever sent twice."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from rollchat.models.tokens import DEFAULT_CONTEXT_WINDOW
from rollchat.models.windows import MIN_WINDOW, WindowBook, smaller_window
from rollchat.providers.base import ContextTooLongError
from tests.compaction.test_autocompact import Built, build_app
from tests.compaction.test_autocompact_wire import (
    Script,
    is_summary,
    make_provider,
    realistic,
)
from tests.e2e import clean_env, run_piped
from tests.wire_servers import OpenAIDialect, Reply, WireServer, error, openai_server

__all__ = ["openai_server"]  # the fixture, imported for pytest

WINDOW = 3000  # the server's real window; rollchat assumes DEFAULT_CONTEXT_WINDOW (128K)


def start(tmp_path: Path, server: WireServer) -> Built:
    built = build_app(tmp_path, make_provider(server), window=DEFAULT_CONTEXT_WINDOW)
    built.session.windows.book = WindowBook(tmp_path / "data" / "windows.json")
    return built


def resent(server: WireServer) -> list[int]:
    """Indexes of refused requests whose exact body was sent more than once."""
    bodies = Counter(json.dumps(r.body, sort_keys=True) for r in server.requests)
    return [i for i, r in enumerate(server.rejected)
            if bodies[json.dumps(r.body, sort_keys=True)] > 1]


def chat_until_refused(built: Built, server: WireServer, most: int = 60) -> int:
    """Chat until the server has refused a request; the index of that message."""
    for i in range(most):
        turn = built.send(realistic(i))
        assert turn.status == "ok", (i, turn.error)
        if server.rejected:
            return i
    raise AssertionError("the server never refused a request")


def test_the_stated_window_is_learned_compacted_retried_and_remembered(tmp_path: Path) -> None:
    with WireServer(OpenAIDialect(), window=WINDOW, responder=Script()) as server:
        built = start(tmp_path, server)
        refused_at = chat_until_refused(built, server)
        session = built.session
        assert session.budget.window == WINDOW  # the rest of the session uses the real one
        out = " ".join(built.output.split())
        assert (f"This model's context is {WINDOW:,} tokens, not "
                f"{DEFAULT_CONTEXT_WINDOW:,}: compacted and retried.") in out
        assert "Shorten or split" not in out
        assert len(built.compactions) == 1
        for i in range(refused_at + 1, refused_at + 25):  # and the chat goes on within it
            assert built.send(realistic(i)).status == "ok"
    assert resent(server) == []
    assert len(server.rejected) == 1  # the window was known from then on: never refused again
    assert all(r.prompt_tokens is not None and r.prompt_tokens <= WINDOW
               for r in server.requests if r not in server.rejected)
    remembered = json.loads((tmp_path / "data" / "windows.json").read_text())
    [entry] = remembered["windows"].values()
    assert entry["tokens"] == WINDOW and entry["stated_by_server"] is True
    assert WindowBook(tmp_path / "data" / "windows.json").get(None, "test-model") == WINDOW


def ollama_refusal(tokens: int, window: int) -> Reply:
    # Ollama's own wording, which gives no size (ollama server/routes.go)
    return error(400, "the input length exceeds the context length")


def test_a_refusal_without_a_size_halves_the_assumption_until_it_fits(tmp_path: Path) -> None:
    with WireServer(OpenAIDialect(), window=WINDOW, responder=Script(),
                    refusal=ollama_refusal) as server:
        built = start(tmp_path, server)
        refused_at = chat_until_refused(built, server)
        for i in range(refused_at + 1, refused_at + 15):
            assert built.send(realistic(i)).status == "ok"
    out = " ".join(built.output.split())
    assert ("The server did not say how large this model's context is; assuming" in out
            and "compacted and retried." in out)
    assert MIN_WINDOW <= built.session.budget.window < DEFAULT_CONTEXT_WINDOW // 2
    assert resent(server) == []
    assert "summary failed" not in out


def summary_refusing(limit: int) -> Any:
    """A server whose chat has room, but whose summary requests over ``limit`` are refused."""
    script = Script()

    def respond(body: dict[str, Any]) -> Reply:
        from tests.wire_servers import prompt_tokens, too_long

        size = prompt_tokens(body)
        if is_summary(body) and size > limit:
            return too_long(OpenAIDialect(), size, limit)
        return script(body)
    return respond


LIMIT = 2300  # the summary requests a server takes at most


def test_a_refused_summary_request_is_cut_smaller_never_sent_again(tmp_path: Path) -> None:
    # the chat fits (its last request is about 1,900 tokens); the summary request that reuses
    # it, with the instruction (about 2,380), does not
    with WireServer(OpenAIDialect(), counting=True, responder=summary_refusing(LIMIT)) as server:
        built = start(tmp_path, server)
        for i in range(20):
            assert built.send(realistic(i)).status == "ok"
        built.app.compact()
    summaries = [r for r in server.requests if is_summary(r.body)]
    refused = [r for r in summaries if r.prompt_tokens is not None and r.prompt_tokens > LIMIT]
    assert len(refused) == 1  # one refusal taught the window; every later request fit it
    bodies = [json.dumps(r.body, sort_keys=True) for r in summaries]
    assert len(set(bodies)) == len(bodies)  # no summary request sent twice
    out = " ".join(built.output.split())
    assert "summary failed" not in out  # the model wrote it, in smaller parts
    assert f"This model's context is {LIMIT:,} tokens, not {DEFAULT_CONTEXT_WINDOW:,}" in out
    assert built.session.budget.window == LIMIT


def test_a_message_too_big_for_the_learned_window_says_so(tmp_path: Path) -> None:
    with WireServer(OpenAIDialect(), window=WINDOW, responder=Script()) as server:
        built = start(tmp_path, server)
        built.send(realistic(0))
        huge = "[1] " + "the reconciliation log line that repeats " * 500
        turn = built.send(huge)
    assert turn.status == "unanswered"  # kept in the transcript, marked, nothing lost
    out = " ".join(built.output.split())
    assert f"This model's context is {WINDOW:,} tokens, not {DEFAULT_CONTEXT_WINDOW:,}" in out
    assert "your message alone is about" in out and "it was not sent again" in out
    assert sum(r.body["messages"][-1]["content"] == huge for r in server.requests) == 1
    assert huge in (tmp_path / "sessions").glob("*.md").__next__().read_text()


@pytest.mark.parametrize(("limit", "window", "sent", "expected"), [
    (8192, 128_000, 9000, 8192),  # stated: taken as it is
    (200_000, 200_000, 199_000, None),  # stated, not smaller: nothing learned
    (None, 128_000, 9000, 9000),  # not stated: half the assumption, at most what was refused
    (None, 16_000, 15_000, 8000),
    (None, 1500, 1400, None),  # never under MIN_WINDOW
])
def test_smaller_window(limit: int | None, window: int, sent: int,
                        expected: int | None) -> None:
    error = ContextTooLongError("too long", limit=limit)
    assert smaller_window(error, window, sent) == expected


def test_the_file_keeps_no_credentials_and_survives_garbage(tmp_path: Path) -> None:
    path = tmp_path / "windows.json"
    path.write_text("{not json")
    book = WindowBook(path)
    assert book.get("http://u:secret@127.0.0.1:8000/v1", "m") is None
    book.remember("http://u:secret@127.0.0.1:8000/v1", "m", 4096, source="server")
    assert "secret" not in path.read_text()
    assert book.get("http://u:secret@127.0.0.1:8000/v1", "m") == 4096
    assert book.get("http://127.0.0.1:9000/v1", "m") is None  # per base URL
    assert book.get("http://u:secret@127.0.0.1:8000/v1", "other") is None  # and per model


WRITER = """
import sys
from pathlib import Path
from rollchat.models.windows import WindowBook
book = WindowBook(Path(sys.argv[1]))
for i in range(150):
    book.remember(f"http://127.0.0.1:{sys.argv[2]}/v1", f"model-{i}", 2048 + i, source="server")
"""


def test_two_processes_writing_at_once_never_corrupt_the_file(tmp_path: Path) -> None:
    path = tmp_path / "data" / "windows.json"
    writers = [subprocess.Popen([sys.executable, "-c", WRITER, str(path), port])
               for port in ("1", "2")]
    assert [w.wait(timeout=120) for w in writers] == [0, 0]
    data = json.loads(path.read_text())  # whole JSON: a rename never leaves half a file
    ports = {key.split()[0] for key in data["windows"]}
    assert ports <= {"http://127.0.0.1:1/v1", "http://127.0.0.1:2/v1"}
    assert len(data["windows"]) == 300  # every entry of both writers: no update lost
    assert not list(path.parent.glob(".windows-*"))  # no temporary file left behind


def test_the_next_run_starts_with_the_learned_window(tmp_path: Path,
                                                     openai_server: WireServer) -> None:
    """Through the CLI: the first run learns the window from the refusal and says so; the
    second run's `context` shows it before any refusal."""
    openai_server.window, openai_server.counting = WINDOW, True
    openai_server.responder = Script()
    env = clean_env(tmp_path / "home")
    lines = "".join(f"{realistic(i)}\n" for i in range(40)) + "exit\n"
    first = run_piped(tmp_path, lines, "--base-url", openai_server.url, "--model", "mystery-7b",
                      env=env, timeout=240)
    assert first.returncode == 0, first.stderr
    out = " ".join(first.stdout.split())
    assert (f"This model's context is {WINDOW:,} tokens, not {DEFAULT_CONTEXT_WINDOW:,}: "
            "compacted and retried.") in out
    stored = json.loads((tmp_path / "home" / "data" / "rollchat" / "windows.json").read_text())
    assert [e["tokens"] for e in stored["windows"].values()] == [WINDOW]
    second = run_piped(tmp_path, "context\nexit\n", "--base-url", openai_server.url,
                       "--model", "mystery-7b", env=env)
    assert second.returncode == 0, second.stderr
    assert f"(window {WINDOW:,} tokens, stated by the server;" in second.stdout
