"""No library warning reaches the screen: ``responses.compact``'s items are taken as the server
sent them (the SDK's models serialized back raised pydantic serializer warnings), and any
warning a library raises goes to rollchat's log file (cli/logs.py), not to stderr."""

from __future__ import annotations

import logging
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

from rollchat.cli.logs import log_to_file
from tests.providers.test_responses_context_management import chat_request, provider
from tests.wire_responses import ResponsesServer, responses_server

__all__ = ["responses_server"]


def test_responses_compact_raises_no_warning(responses_server: ResponsesServer) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        done = provider(responses_server).compact(chat_request(), "Summarize.")
    assert done.block.type == "compaction_window" or done.block.data
    assert [str(w.message)[:120] for w in caught] == []


@pytest.fixture
def logged(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "logs" / "rollchat.log"
    handler = log_to_file(path)
    try:
        yield path
    finally:
        logging.captureWarnings(False)
        for name in ("py.warnings", "rollchat"):
            logging.getLogger(name).removeHandler(handler)
            logging.getLogger(name).propagate = True
        handler.close()


def test_a_library_warning_goes_to_the_log_not_the_terminal(
        logged: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert not logged.exists()  # nothing logged yet: no file
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.warn("Pydantic serializer warnings: something", UserWarning, stacklevel=1)
    logging.getLogger("rollchat.providers.fitting").info("gpt-5 refused 'temperature'")
    captured = capsys.readouterr()
    assert captured.err == "" and captured.out == ""
    text = logged.read_text()
    assert "Pydantic serializer warnings: something" in text and "refused 'temperature'" in text
    assert logged.stat().st_mode & 0o777 == 0o600
