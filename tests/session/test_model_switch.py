"""``model NAME`` in a chat, as a user meets it: rollchat run piped against the local OpenAI
wire-format server (the requests it records show which model answered), and an Anthropic
chat that is asked for a model it does not serve."""

from __future__ import annotations

from pathlib import Path

from rollchat.providers.names import ANTHROPIC, DEFAULT_MODELS
from rollchat.storage.transcript import parse
from tests.e2e import clean_env, run_piped, write_config
from tests.wire_servers import WireServer, openai_server

__all__ = ["openai_server"]

CONFIG = """\
retry:
  max_retries: 0
models:
  big-model:
    context_window: 50000
    price: {input: 1.0, output: 2.0}
"""


def test_model_name_switches_the_model_for_the_rest_of_the_chat(
        openai_server: WireServer, tmp_path: Path) -> None:
    cfg = write_config(tmp_path / "rollchat.yml", CONFIG)
    lines = ["hello", "model", "model big-model", "model", "and again", "context"]
    done = run_piped(tmp_path, "\n".join(lines) + "\n", "--config", str(cfg), "--provider",
                     "openai", "--model", "small-model", "--base-url", openai_server.url,
                     env=clean_env(tmp_path / "home", OPENAI_API_KEY="test"))
    out = " ".join(done.stdout.split())
    assert done.returncode == 0, done.stderr
    assert "Model: small-model via openai; window 128K tokens." in out
    assert "any model the server serves (named in the config or known: big-model" in out
    assert "Model: big-model from your next message (was small-model); window 50K tokens" in out
    assert "Model: big-model via openai; window 50K tokens." in out
    models = [b["model"] for b in openai_server.bodies]
    assert models[:2] == ["small-model", "big-model"], models  # then the exit summary
    context = out[out.index("You: context"):]
    # the estimate and budget are the new model's ("Next request to big-model (window 50,000
    # tokens ...", the automatic compaction at 80% of it)
    assert "big-model" in context and "50,000" in context and "40,000" in context, context
    [path] = (tmp_path / "sessions").glob("*.md")
    t = parse(path.read_text())
    assert t.header.model == "small-model"  # the model the session started with
    notes = [(n.kind, n.text) for turn in t.turns for n in turn.notes]
    assert notes == [("model", "big-model answers from here on (was small-model)")]
    assert t.turns[0].notes == () and t.turns[1].user == "and again"


def test_an_unknown_model_is_refused_and_the_model_unchanged(tmp_path: Path) -> None:
    done = run_piped(tmp_path, "model gpt-4o\nmodel\n", "--provider", "anthropic",
                     env=clean_env(tmp_path / "home", ANTHROPIC_API_KEY="test"))
    out = " ".join(done.stdout.split())
    assert "Error: unknown model 'gpt-4o' for anthropic; choose one of: claude-" in out
    assert "the model is unchanged" in out
    assert f"Model: {DEFAULT_MODELS[ANTHROPIC]} via anthropic" in out
