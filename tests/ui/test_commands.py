from rollchat.ui import commands


def _name(line: str) -> str | None:
    parsed = commands.parse(line)
    if parsed is None:
        return None
    if isinstance(parsed, commands.Unknown):
        return f"unknown:{parsed.word}"
    return f"{parsed[0].name}:{parsed[1]}"


def test_bare_and_slash_forms() -> None:
    assert _name("exit") == "exit:"
    assert _name("/exit") == "exit:"
    assert _name("  quit  ") == "quit:"
    assert _name("/help") == "help:"
    assert _name("context") == "context:"


def test_bare_word_with_text_is_chat() -> None:
    assert _name("exit the loop when the counter hits zero") is None
    assert _name("help me write a parser") is None
    assert _name("resume the work on the parser") is None


def test_commands_with_arguments() -> None:
    assert _name("compact keep the API details") == "compact:keep the API details"
    assert _name("/compact") == "compact:"
    assert _name("resume 3") == "resume:3"
    assert _name("/resume assistant_2026") == "resume:assistant_2026"


def test_unknown_slash_word_is_not_chat() -> None:
    assert _name("/frobnicate now") == "unknown:frobnicate"


def test_multiline_text_is_chat() -> None:
    assert _name("exit\nplease") is None
    assert _name("") is None
    assert _name("hello") is None


def test_completions_offer_both_forms() -> None:
    words = commands.completions()
    assert "compact" in words and "/resume" in words


def test_toolbar_shows_context_first_and_an_estimate_before_any_report(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from rollchat.ui.repl import toolbar_text
    from tests.compaction.test_autocompact import FakeProvider, build_app

    built = build_app(tmp_path, FakeProvider())
    # nothing counted before the first message (the tokenizer loads after the prompt)
    assert toolbar_text(built.app).startswith(" context – of 4,000 tokens · 0 queries · Rollo")
    built.send("hello there")
    text = toolbar_text(built.app)
    size = built.session.estimate()  # the figure `context` and automatic compaction use
    assert text.startswith(f" context {size:,} of 4,000 tokens (") and "· 1 query ·" in text
    built.app.compact()
    assert toolbar_text(built.app).startswith(f" context {built.session.estimate():,} of ")
