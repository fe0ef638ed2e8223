"""An answer the provider stopped at the output limit says so: on screen (a warning), in the
transcript (status error, with the reason) and to the model (its partial answer is marked as
cut off in the context), through the real SDKs against the local wire servers."""

from __future__ import annotations

from pathlib import Path

import pytest

from rollchat.storage.transcript import parse
from tests.e2e import clean_env, run_piped
from tests.wire_servers import WireServer, anthropic_server, openai_server, text

__all__ = ["anthropic_server", "openai_server"]  # the fixtures, imported for pytest

STOPS = {"openai_server": "length", "anthropic_server": "max_tokens"}


@pytest.mark.parametrize("server_name", sorted(STOPS))
def test_an_answer_cut_at_the_output_limit_says_so(server_name: str, tmp_path: Path,
                                                   request: pytest.FixtureRequest) -> None:
    server: WireServer = request.getfixturevalue(server_name)
    server.push(text("The three steps are: first, open the", stop=STOPS[server_name]),
                text("Second, close it."))
    provider = "openai" if server.url.endswith("/v1") else "anthropic"
    key = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}[provider]
    done = run_piped(tmp_path, "list the steps\ngo on\n", "--provider", provider, "--model",
                     "test-model", "--base-url", server.url,
                     env=clean_env(tmp_path / "home", **{key: "test"}))
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    assert out.count("Output limit reached: the answer was cut off at") == 1  # once, a warning
    assert "Error:" not in out
    [session] = (tmp_path / "sessions").glob("*.md")
    first, second = parse(session.read_text(encoding="utf-8")).turns
    assert first.status == "error" and first.assistant == "The three steps are: first, open the"
    assert first.error is not None and "output limit" in first.error
    assert second.status == "ok"
    sent = str(server.bodies[1]["messages"])  # the model is told its answer was cut off
    assert "open the\\n\\n[answer cut off: output limit of" in sent


def test_p_cut_off_at_the_output_limit_says_so_and_exits_0(tmp_path: Path) -> None:
    """`-p`: the answer on stdout, "Output limit reached" on stderr and no "Error:" line beside
    exit 0 (docs/oneshot.md: 0, answered; stop_reason max_tokens)."""
    import json

    from tests.wire_local import local_server, sse_answer

    with local_server(chat=lambda body: sse_answer("The three steps are: first", "length",
                                                   written=64)) as server:
        done = run_piped(tmp_path, None, "--provider", "openai", "--model", "smollm2",
                         "--base-url", server.url, "-p", "list the steps", "--output-format",
                         "json", env=clean_env(tmp_path / "home", OPENAI_API_KEY="none"))
    assert done.returncode == 0, done.stderr
    assert "Output limit reached" in done.stderr and "Error" not in done.stderr
    out = json.loads(done.stdout)
    assert out["answer"] == "The three steps are: first"
    assert (out["stop_reason"], out["exit_code"]) == ("max_tokens", 0)
