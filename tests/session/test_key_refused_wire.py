"""Issue 35, item 7: a refused API key (HTTP 401) is said once, naming the one variable the
provider in use reads (not both providers'); the exit does not ask the same key again for its
summary. The real OpenAI SDK against a local wire server."""

from __future__ import annotations

from pathlib import Path

from tests.e2e import clean_env, run_piped
from tests.wire_servers import WireServer, error, openai_server

__all__ = ["openai_server"]

REFUSED = "Incorrect API key provided: sk-bad"


def test_a_refused_key_is_said_once_with_its_variable(tmp_path: Path,
                                                      openai_server: WireServer) -> None:
    openai_server.push(*[error(401, REFUSED, error_type="invalid_request_error",
                               code="invalid_api_key")] * 3)
    env = clean_env(tmp_path / "home", ROLLCHAT_PROVIDER="openai", OPENAI_API_KEY="sk-bad",
                    ROLLCHAT_BASE_URL=openai_server.url, ROLLCHAT_MODEL="gpt-4o-mini")
    done = run_piped(tmp_path, "Plan the migration of billing to postgres.\nexit\n",
                     "--exit-summary", "model", env=env)
    assert done.returncode == 0, done.stderr
    said = done.stdout + done.stderr
    assert "Check the API key in OPENAI_API_KEY." in said
    assert "ANTHROPIC_API_KEY" not in said
    assert said.count(REFUSED) == 1  # the answer's error only: the exit did not ask again
    assert len(openai_server.requests) == 1
    assert "the model was not asked: its API key was refused" in said


def test_an_unknown_model_is_named_with_how_to_choose_another(
        tmp_path: Path, openai_server: WireServer) -> None:
    gone = "The model `gpt-9-turbo` does not exist or you do not have access to it."
    openai_server.push(*[error(404, gone, error_type="invalid_request_error",
                               code="model_not_found")] * 3)
    env = clean_env(tmp_path / "home", ROLLCHAT_PROVIDER="openai", OPENAI_API_KEY="sk-test",
                    ROLLCHAT_BASE_URL=openai_server.url, ROLLCHAT_MODEL="gpt-9-turbo")
    done = run_piped(tmp_path, "Plan the migration of billing to postgres.\nexit\n",
                     "--exit-summary", "model", env=env)
    assert done.returncode == 0, done.stderr
    said = " ".join((done.stdout + done.stderr).split())
    assert "no such model: HTTP 404" in said
    assert ("The server has no model 'gpt-9-turbo': 'model' lists the choices, 'model NAME' "
            "switches (or start with --model NAME)") in said
    assert said.count(gone) == 1 and len(openai_server.requests) == 1  # not asked again


def test_a_summary_the_model_was_not_asked_for_is_no_warning() -> None:
    from rollchat.compaction.call import NOT_ASKED, SummaryOutcome
    from rollchat.domain import Summary
    from rollchat.session.summary_notes import summary_notices

    local = Summary("Greetings.", (), (), ())
    chosen = SummaryOutcome(local, True, f"{NOT_ASKED}its API key was refused")
    failed = SummaryOutcome(local, True, "HTTP 500: down")
    [said] = summary_notices(chosen, [], [], None)
    assert said.level == "info" and said.text.startswith("The summary is the local one")
    [said] = summary_notices(failed, [], [], None)
    assert said.level == "warning" and "failed" in said.text
