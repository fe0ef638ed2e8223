"""Issue 35, smaller list: the banner and the README name the same ways of asking the offline
model for a tool (``use TOOL key=value`` and ``use TOOL {"key": "value"}``), and both work."""

from __future__ import annotations

from pathlib import Path

from rollchat.storage.transcript import parse
from rollchat.ui.render import OFFLINE_TOOLS
from tests.e2e import run_piped

README = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")


def test_the_banner_and_the_readme_name_both_forms_and_both_work(tmp_path: Path) -> None:
    for form in ("use TOOL key=value", 'use TOOL {"key": "value"}'):
        assert form in OFFLINE_TOOLS and form in README, form
    made = run_piped(tmp_path, "", "init-agent", "helper.py")
    assert made.returncode == 0, made.stderr
    lines = 'use word_count text="one two three"\nuse word_count {"text": "one two three"}\n'
    done = run_piped(tmp_path, lines, "helper.py", "--yes")
    assert done.returncode == 0, done.stderr
    [path] = (tmp_path / "sessions").glob("*.md")
    calls = [[(t.call.name, dict(t.call.arguments)) for t in turn.tools]
             for turn in parse(path.read_text(encoding="utf-8")).turns]
    assert calls == [[("word_count", {"text": "one two three"})]] * 2
