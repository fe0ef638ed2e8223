"""The window's "no room" warning (issue 40.2): told once per change of window, after the
window's line and of the same window, never against one the server states now; and the
window asked again after `model NAME`. `rollchat -p` in a process of its own (forked by the
tests' fork server) against the llama-server double (tests/wire_local.LlamaServer: the
recorded /v1/models and /props, n_ctx 2048, or the same bytes stating 8192)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from rollchat.models.windows import WindowBook
from tests.e2e import XDG_DIRS, clean_env, run_piped
from tests.wire_local import LlamaServer, llama_server, recorded

CONFIG = "retry:\n  max_retries: 0\nagents:\n  assistant:\n    max_output_tokens: 4096\n"
NO_ROOM = "max_output_tokens 4,096 leaves no room in the"


def ask(server: LlamaServer, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    return run_piped(tmp_path, None, "--config", "rollchat.yml", "--provider", "openai",
                     "--base-url", server.url, "--model", "smollm2", "-p", "hi",
                     env=clean_env(tmp_path / "home", OPENAI_API_KEY="none"))


def book(tmp_path: Path) -> WindowBook:
    return WindowBook(tmp_path / "home" / XDG_DIRS["XDG_DATA_HOME"] / "rollchat" /
                      "windows.json")


def stating(server: LlamaServer, n_ctx: int) -> LlamaServer:
    """The double's /v1/models and /props stating ``n_ctx`` (4 digits: same lengths)."""
    for route, name in (("GET /v1/models", "models.http"), ("GET /props", "props.http")):
        server.routes[route] = recorded(name).replace(b'"n_ctx":2048',
                                                      b'"n_ctx":%d' % n_ctx)
    return server


def test_no_room_is_told_once_per_change_not_at_every_run(tmp_path: Path) -> None:
    (tmp_path / "rollchat.yml").write_text(CONFIG, encoding="utf-8")
    with llama_server(lambda body: "Hello there.") as server:
        first, second = ask(server, tmp_path), ask(server, tmp_path)
        stating(server, 8192)
        bigger = ask(server, tmp_path)
        stating(server, 2048)
        smaller_again = ask(server, tmp_path)
    for done in (first, second, bigger, smaller_again):
        assert done.returncode == 0, done.stderr
        assert "Hello there." in done.stdout
    assert first.stderr.count(NO_ROOM) == 1
    assert f"{NO_ROOM} 2,048-token window; using 512" in first.stderr
    assert NO_ROOM not in second.stderr  # told already: not at every run
    assert NO_ROOM not in bigger.stderr  # 8,192 leaves room
    assert "Context window: 8,192 tokens (stated by the server" in bigger.stderr
    assert smaller_again.stderr.count(NO_ROOM) == 1  # changed again: told again
    assert smaller_again.stderr.index("Context window: 2,048") < \
        smaller_again.stderr.index(NO_ROOM)


def test_a_remembered_small_window_never_speaks_over_the_stated_one(tmp_path: Path) -> None:
    """windows.json remembers 2,048 from an earlier `-c 2048`; the server now states 8,192:
    no warning about 2,048, the request planned with 8,192."""
    (tmp_path / "rollchat.yml").write_text(CONFIG, encoding="utf-8")
    with llama_server(lambda body: "Hello there.") as server:
        book(tmp_path).remember(server.url, "smollm2", 2048, source="server")
        done = ask(stating(server, 8192), tmp_path)
        [sent] = [body for route, body in server.bodies if route.startswith("POST")]
    assert done.returncode == 0, done.stderr
    assert NO_ROOM not in done.stderr
    assert "Context window: 8,192 tokens (stated by the server" in done.stderr
    assert sent["max_tokens"] == 4096  # not clamped to the 2,048 window's 512
    entry = book(tmp_path).entry(server.url, "smollm2")
    assert entry is not None and entry.tokens == 8192


def test_model_name_asks_the_server_for_the_new_models_window(tmp_path: Path) -> None:
    """After `model NAME` the server is asked again (the model it serves may have changed:
    Ollama, LM Studio): its window applies before the next request."""
    from rollchat.providers.openai import OpenAIProvider
    from rollchat.session.windowing import ask_server
    from tests.compaction.test_autocompact import build_app

    with llama_server(lambda body: "Hello there.") as server:
        built = build_app(tmp_path, OpenAIProvider("gpt-4o", api_key=None,
                                                   base_url=server.url, timeout=30),
                          window=128_000, model="gpt-4o")
        session = built.session
        session.windows.base_url = server.url  # what a base_url agent's session has
        ask_server(session.windows, session.current.provider)
        assert built.send("hi").status == "ok"
        session.use_model("gpt-4.1")  # what `model gpt-4.1` does
        assert session.windows.model == "gpt-4.1" and session.windows.asking is not None
        assert built.send("and now?").status == "ok"
        asked = [route for route, _body in server.bodies if route.startswith("GET")]
    out = " ".join(built.output.split())
    assert out.count("Context window: 2,048 tokens (stated by the server") == 2
    assert session.budget.window == 2048 and asked.count("GET /v1/models") == 2


def test_a_server_found_down_is_asked_its_window_again_when_it_is_back(
        tmp_path: Path) -> None:
    """llama-server stopped mid-chat and started again with -c 8192 on the same port: the
    message that found it down is kept unanswered, and the next one is planned with the
    window the server states now (asked before it is sent), not the 2,048 of before."""
    from urllib.parse import urlsplit

    from rollchat.providers.openai import OpenAIProvider
    from rollchat.session.windowing import ask_server
    from tests.compaction.test_autocompact import build_app

    with llama_server(lambda body: "Hello there.") as first:
        url = first.url
        built = build_app(tmp_path, OpenAIProvider("smollm2", api_key=None, base_url=url,
                                                   timeout=30), window=128_000, model="smollm2")
        session = built.session
        session.windows.base_url = url  # what a base_url agent's session has
        ask_server(session.windows, session.current.provider)
        assert built.send("hi").status == "ok"
        assert session.budget.window == 2048
    assert built.send("are you there?").status == "unanswered"  # nothing listens
    with llama_server(lambda body: "Back.", n_ctx=8192,
                      port=urlsplit(url).port or 0) as again:
        stating(again, 8192)
        assert built.send("back?").status == "ok"
    assert session.budget.window == 8192
    out = " ".join(built.output.split())
    assert "Context window: 8,192 tokens (stated by the server" in out
    assert out.index("Context window: 8,192") < out.index("Back.")  # before it was sent
