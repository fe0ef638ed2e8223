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
    assert out.count("cut off at the output limit") == 1  # said once, as a warning
    assert "Error:" not in out
    [session] = (tmp_path / "sessions").glob("*.md")
    first, second = parse(session.read_text(encoding="utf-8")).turns
    assert first.status == "error" and first.assistant == "The three steps are: first, open the"
    assert first.error is not None and "output limit" in first.error
    assert second.status == "ok"
    sent = str(server.bodies[1]["messages"])  # the model is told its answer was cut off
    assert "open the\\n\\n[answer cut off: output limit of" in sent
