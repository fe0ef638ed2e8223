"""The window is known before the first request where the server says it (issue 28.1):
Ollama's and vLLM's documented shapes served by a local server (tests/fixtures/real/ollama,
vllm; their sources in PROVENANCE.md there), and windows.json keeping where each window came
from: a window the server stated is never replaced by a guess."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rollchat.models.windows import WindowBook, WindowLearner
from rollchat.providers.base import ContextTooLongError
from rollchat.providers.window_probe import StatedWindow, probe_window, server_root
from tests.wire_local import FIXTURES, local_server


def json_reply(payload: object) -> bytes:
    body = json.dumps(payload).encode()
    return (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n"
            b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)


OLLAMA_SHOW = json.loads((FIXTURES / "ollama" / "api_show.json").read_text())
# Ollama's /v1/models (OpenAI-compatible) names the models and says nothing of windows
OLLAMA_MODELS = {"object": "list", "data": [{"id": "llama3.2", "object": "model",
                                             "created": 1, "owned_by": "library"}]}


def ollama_routes(show: dict[str, Any], ps: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"GET /v1/models": json_reply(OLLAMA_MODELS),
            "GET /api/version": json_reply({"version": "0.12.3"}),
            "POST /api/show": json_reply(show),
            "GET /api/ps": json_reply(ps or {"models": []})}


def test_vllm_states_max_model_len_at_v1_models() -> None:
    models = json.loads((FIXTURES / "vllm" / "v1_models.json").read_text())
    with local_server({"GET /v1/models": json_reply(models)}) as server:
        stated = probe_window(server.url, "Qwen/Qwen2.5-1.5B-Instruct")
    assert stated == StatedWindow(32_768, "server", "/v1/models max_model_len")


def test_ollama_num_ctx_as_configured_is_what_applies() -> None:
    show = dict(OLLAMA_SHOW, parameters=OLLAMA_SHOW["parameters"] + "\nnum_ctx 16384")
    with local_server(ollama_routes(show)) as server:
        stated = probe_window(server.url, "llama3.2")
    assert stated == StatedWindow(16_384, "configured", "/api/show parameters num_ctx")
    routes = [route for route, _body in server.bodies]
    assert routes[:3] == ["GET /v1/models", "GET /api/version", "POST /api/show"]
    assert server.bodies[2][1] == {"model": "llama3.2"}


def test_ollama_without_num_ctx_the_loaded_context_or_its_default_as_a_guess() -> None:
    loaded = {"models": [{"name": "llama3.2:latest", "model": "llama3.2",
                          "context_length": 6144}]}
    with local_server(ollama_routes(OLLAMA_SHOW, loaded)) as server:
        assert probe_window(server.url, "llama3.2") == StatedWindow(
            6_144, "server", "/api/ps context_length")
    with local_server(ollama_routes(OLLAMA_SHOW)) as server:
        stated = probe_window(server.url, "llama3.2")
    # llama.context_length 8,192 is the model's longest; Ollama runs it with 4K unless set
    assert stated is not None and (stated.tokens, stated.source) == (4_096, "guess")


def test_lm_studio_states_the_loaded_context_length() -> None:
    models = {"object": "list", "data": [
        {"id": "qwen2.5-7b-instruct", "object": "model", "type": "llm", "state": "loaded",
         "max_context_length": 32_768, "loaded_context_length": 8_192}]}
    with local_server({"GET /api/v0/models": json_reply(models)}) as server:
        stated = probe_window(server.url, "qwen2.5-7b-instruct")
    assert stated == StatedWindow(8_192, "server", "/api/v0/models loaded_context_length")


def test_a_server_that_states_nothing_leaves_the_window_alone() -> None:
    with local_server() as server:  # 404 everywhere, as a bare OpenAI-compatible proxy
        assert probe_window(server.url, "m") is None
    assert server_root("http://127.0.0.1:8080/v1") == "http://127.0.0.1:8080"
    assert server_root("http://host/proxy/v1/") == "http://host/proxy"


def learner(tmp_path: Path, window: int = 128_000) -> tuple[WindowLearner, list[int]]:
    changes: list[int] = []
    book = WindowBook(tmp_path / "windows.json")
    return WindowLearner(book, model="m", base_url="http://127.0.0.1:8080/v1", window=window,
                         on_change=changes.append), changes


def test_a_stated_window_applies_at_the_next_poll_and_is_never_replaced_by_a_guess(
        tmp_path: Path) -> None:
    windows, changes = learner(tmp_path)
    windows.ask(lambda: StatedWindow(2_048, "server", "/v1/models meta.n_ctx")).join(5)
    assert changes == []  # nothing changes under the session's feet
    assert windows.poll() is not None and changes == [2_048]
    assert (windows.window, windows.source) == (2_048, "server")
    # a refusal that states no size is not taken as a smaller window: the server said it
    assert windows.refused(ContextTooLongError("the input length exceeds the context"),
                           3_000) is None
    assert windows.cut_off(1_500, 100, 512) is None
    book = WindowBook(tmp_path / "windows.json")
    assert book.remember("http://127.0.0.1:8080/v1", "m", 1_024, source="guess") is False
    entry = book.entry("http://127.0.0.1:8080/v1", "m")
    assert entry is not None and (entry.tokens, entry.source) == (2_048, "server")
    # a refusal that states the size is the server speaking: it is taken
    learned = windows.refused(ContextTooLongError("n_ctx", limit=1_536), 3_000)
    assert learned is not None and learned.stated and windows.window == 1_536


def test_a_guess_is_recorded_as_one_and_a_later_statement_replaces_it(tmp_path: Path) -> None:
    windows, _changes = learner(tmp_path, window=8_192)
    learned = windows.refused(ContextTooLongError("the input length exceeds the context"),
                              6_000)
    assert learned is not None and not learned.stated
    stored = json.loads((tmp_path / "windows.json").read_text())
    [entry] = stored["windows"].values()
    assert entry["source"] == "guess" and entry["stated_by_server"] is False
    again, _ = learner(tmp_path, window=entry["tokens"])
    assert again.source == "guess"  # shown as one in `context` (session/windowing.py)
    again.ask(lambda: StatedWindow(4_096, "server", "/props n_ctx")).join(5)
    assert again.poll() is not None and (again.window, again.source) == (4_096, "server")


def test_an_answer_cut_off_by_the_window_teaches_a_guess(tmp_path: Path) -> None:
    windows, changes = learner(tmp_path, window=8_192)
    assert windows.cut_off(1_900, 148, 512) is not None  # stopped at 148 of 512: the window
    assert changes == [2_048] and windows.source == "guess"
    assert windows.cut_off(1_000, 512, 512) is None  # the output limit, not the window


def test_version_1_files_are_read(tmp_path: Path) -> None:
    path = tmp_path / "windows.json"
    path.write_text(json.dumps({"version": 1, "windows": {"default m": {
        "model": "m", "base_url": None, "tokens": 4_096, "stated_by_server": True}}}))
    entry = WindowBook(path).entry(None, "m")
    assert entry is not None and (entry.tokens, entry.source) == (4_096, "server")
