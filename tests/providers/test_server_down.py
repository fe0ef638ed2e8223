"""A server on this machine that is not running: the refused connection is said at once with
what to check, never retried with backoff (waiting will not start it), on both SDKs; a remote
host that refuses is still retried (it may be restarting). Through the CLI, piped."""

from __future__ import annotations

from pathlib import Path

import pytest

from rollchat.domain import Message
from rollchat.providers.base import ChatRequest, ProviderConnectionError, ServerDownError
from tests.e2e import clean_env, run_piped, write_config
from tests.mcp_helpers import free_port

CONFIG = "retry:\n  max_retries: 3\n  base_delay: 2\n"


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_local_server_that_is_down_fails_at_once_saying_so(tmp_path: Path,
                                                            provider: str) -> None:
    url = f"http://127.0.0.1:{free_port()}" + ("/v1" if provider == "openai" else "")
    key = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}[provider]
    cfg = write_config(tmp_path / "rollchat.yml", CONFIG)
    done = run_piped(tmp_path, "hello there\n", "--config", str(cfg), "--provider", provider,
                     "--model", "m", "--base-url", url,
                     env=clean_env(tmp_path / "home", **{key: "test"}))
    out = " ".join((done.stdout + done.stderr).split())
    assert done.returncode == 0, out
    assert f"nothing listens at {url}: is the server running?" in out
    assert "retrying in" not in out  # no backoff: 3 retries of 2, 4, 8 s before


def test_only_a_refused_local_connection_is_not_retried() -> None:
    from rollchat.providers.openai import OpenAIProvider

    request = ChatRequest("m", "", (Message("user", "hi"),), 10)
    for url, down in ((f"http://localhost:{free_port()}/v1", True),
                      (f"http://127.0.0.1:{free_port()}/v1", True)):
        provider = OpenAIProvider("m", api_key="k", base_url=url, timeout=5)
        with pytest.raises(ProviderConnectionError) as caught:
            list(provider.stream(request))
        assert isinstance(caught.value, ServerDownError) is down
        assert caught.value.retryable is not down
    remote = OpenAIProvider("m", api_key="k", base_url="http://example.invalid/v1", timeout=5)
    error = ProviderConnectionError("Connection refused")
    assert remote._down(error) is error  # a remote host that refuses may be restarting
