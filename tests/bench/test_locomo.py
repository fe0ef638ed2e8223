"""bench/bench_locomo.py end to end on a small LoCoMo-shaped file written here (invented people and
lines, not LoCoMo's data): parsing, the chain of sessions it lives, LoCoMo's F1 as its own
evaluation code computes it, the reach scores, resuming a half-done run, and a model's answers
through the real OpenAI SDK against the local wire server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from bench.locomo_data import (
    NOT_MENTIONED,
    answer_reached,
    f1_multi,
    f1_score,
    load,
    normalize_answer,
    score_answer,
    vocabulary,
)
from bench.locomo_live import OPENS, exchanges

from bench import bench_locomo
from rollchat.storage.store import SessionStore
from rollchat.storage.transcript import parse
from tests.wire_servers import OpenAIDialect, WireServer, last_user_text, text

A, B = "Ada", "Bo"


def _s(session: int, lines: list[tuple[str, str]]) -> list[dict[str, Any]]:
    return [{"speaker": who, "dia_id": f"D{session}:{i}", "text": said}
            for i, (who, said) in enumerate(lines, 1)]


def synthetic() -> list[dict[str, Any]]:
    """One conversation of three sessions: facts planted in the first, chit-chat after."""
    conversation = {
        "speaker_a": A, "speaker_b": B,
        "session_1_date_time": "9:15 am on 3 March, 2021",
        "session_1": _s(1, [
            (A, "Morning Bo! I adopted a ferret named Quillon yesterday."),
            (B, "A ferret! I finished building a kayak from cedar strips."),
            (A, "Wow. Quillon already stole my sock."),
            (B, "Ha, classic."),
        ]),
        "session_2_date_time": "6:40 pm on 20 March, 2021",
        "session_2": [*_s(2, [
            (B, "Hey Ada, how is the ferret doing?"),
            (A, "Great, he sleeps in a hammock now."),
            (B, "Lovely. I took the kayak to Lake Vessa last weekend."),
        ]), {"speaker": A, "dia_id": "D2:4", "text": "Look at this!",
             "blip_caption": "a photo of a ferret in a hammock"}],
        "session_3_date_time": "11:05 am on 2 April, 2021",
        "session_3": _s(3, [
            (A, "I started learning the bassoon."),
            (B, "Bold choice! Any teacher?"),
            (A, "Yes, Marguerite teaches me on Tuesdays."),
            (B, "Sounds fun."),
        ]),
    }
    qa = [
        {"question": "What is the name of Ada's ferret?", "answer": "Quillon",
         "evidence": ["D1:1"], "category": 4},
        {"question": "When did Ada adopt a ferret?", "answer": "2 March 2021",
         "evidence": ["D1:1"], "category": 2},
        {"question": "What did Bo build and where did he take it?",
         "answer": "kayak, Lake Vessa", "evidence": ["D1:2; D2:3"], "category": 1},
        {"question": "Who teaches Ada the bassoon?", "answer": "Marguerite; a teacher",
         "evidence": ["D3:3"], "category": 3},
        {"question": "What instrument did Bo start learning?", "evidence": ["D3:1"],
         "category": 5, "adversarial_answer": "bassoon"},
    ]
    return [{"sample_id": "synthetic-1", "conversation": conversation, "qa": qa}]


@pytest.fixture
def data(tmp_path: Path) -> Path:
    path = tmp_path / "synthetic.json"
    path.write_text(json.dumps(synthetic()), encoding="utf-8")
    return path


def test_parsing(data: Path) -> None:
    [conv] = load(data)
    assert (conv.speaker_a, conv.speaker_b) == (A, B)
    assert [s.date.isoformat() for s in conv.sittings] == [
        "2021-03-03T09:15:00", "2021-03-20T18:40:00", "2021-04-02T11:05:00"]
    assert conv.line("D2:4") is not None
    assert conv.line("D2:4").text == "Look at this! [shares a photo of a ferret in a hammock]"
    assert conv.questions[2].evidence == ("D1:2", "D2:3")  # "D1:2; D2:3" in one item
    adversarial = conv.questions[4]
    assert (adversarial.answer, adversarial.distractor) == (NOT_MENTIONED, "bassoon")
    # a session that opens with speaker B starts with an empty user message
    assert exchanges(conv.sittings[1], A)[0] == (OPENS, "Hey Ada, how is the ferret doing?")
    assert exchanges(conv.sittings[1], A)[-1] == (
        "Look at this! [shares a photo of a ferret in a hammock]", "")


def test_bad_data_is_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                         data: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"not": "a list"}')
    assert bench_locomo.main(["--data", str(bad), "--work", str(tmp_path / "w")]) == 2
    assert "expected a list of conversations" in capsys.readouterr().err
    assert bench_locomo.main(["--data", str(data), "--conversations", "2"]) == 2
    assert "outside 1-1" in capsys.readouterr().err


def test_f1_as_locomo_computes_it(data: Path) -> None:
    """Values computed by LoCoMo's task_eval/evaluation.py (normalize_answer, f1_score, f1,
    eval_question_answering) on these cases."""
    assert normalize_answer("The cat, and a Dog!") == "cat dog"
    assert normalize_answer("Mom's \"best\" (pottery) class") == "moms best pottery class"
    assert normalize_answer("  A  an   the andy ") == "andy"
    assert f1_score("in May 2023", "7 May 2023") == pytest.approx(2 / 3)
    assert f1_score("running", "runs") == 1.0  # Porter stems
    assert f1_score("adoption agencies", "Adoption agency") == 1.0
    assert f1_score("", "x") == 0.0
    assert f1_multi("Psychology, counseling", "Psychology, counseling certification") \
        == pytest.approx(0.8333333)
    assert f1_multi("pottery", "painting, pottery, camping") == pytest.approx(1 / 3)
    [conv] = load(data)
    by_cat = {q.category: q for q in conv.questions}
    assert score_answer(by_cat[3], "marguerite") == 1.0  # before the ';'
    assert score_answer(by_cat[5], "Not mentioned in the conversation") == 1.0
    assert score_answer(by_cat[5], "bassoon") == 0.0
    assert score_answer(by_cat[1], "Lake Vessa") == 0.5


def test_reach_words(data: Path) -> None:
    [conv] = load(data)
    temporal = conv.questions[1]
    assert answer_reached(temporal, vocabulary("Now: Tuesday 2021-03-02 10:00 UTC")) is True
    assert answer_reached(temporal, vocabulary("in March 2021")) is False
    assert answer_reached(conv.questions[4], vocabulary("anything")) is None


def _rows(work: Path, mode: str) -> list[dict[str, Any]]:
    path = work / "offline" / "synthetic-1" / f"{mode}.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_the_conversation_lived_as_a_chain_then_questions(
        data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    work = tmp_path / "work"
    assert bench_locomo.main(["--data", str(data), "--work", str(work), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "(b), the answers' F1, needs --base-url/--model" in out
    for mode in bench_locomo.MODES:
        assert f"| {mode} | all | 5 |" in out
    # the chain: one session per LoCoMo session, each resumed from the one before, turns as
    # given at the session's date, each ended with a summary
    store = SessionStore(work / "offline" / "synthetic-1" / "chain" / "sessions")
    files = sorted((store.root).glob("*.md"))
    transcripts = [parse(f.read_text(encoding="utf-8")) for f in files]
    chain = [t for t in transcripts if not t.header.forked]
    assert len(chain) == 3
    first = next(t for t in chain if t.header.resumed_from is None)
    assert first.summary is not None
    queries = [t for t in first.turns if t.kind == "query"]
    assert queries[0].user == "Morning Bo! I adopted a ferret named Quillon yesterday."
    assert queries[0].assistant == "A ferret! I finished building a kayak from cedar strips."
    assert queries[0].started.date().isoformat() == "2021-03-03"
    # full context holds every answer; the summary-only chain loses some of session 1
    full, chain_rows = _rows(work, "full"), _rows(work, "chain")
    assert [r["answer_reach"] for r in full] == [True, True, True, True, None]
    assert all(r["evidence_reach"] for r in full)
    assert all(r["tokens"] > 0 for r in chain_rows)
    tools = _rows(work, "tools")
    assert tools[3]["answer_reach"] is True  # the archive finds 'bassoon' in the last session
    assert all(t["tokens"] > m["tokens"] for t, m in zip(tools, _rows(work, "memory"), strict=True))


def test_a_half_done_run_resumes(data: Path, tmp_path: Path,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    work = tmp_path / "work"
    assert bench_locomo.main(["--data", str(data), "--work", str(work), "--quiet",
                              "--questions", "2", "--modes", "chain,full"]) == 0
    marker = work / "offline" / "synthetic-1" / "chain" / bench_locomo.CHAIN_DONE
    lived = marker.read_text()
    sessions = sorted(p.name for p in marker.parent.joinpath("sessions").glob("*.md"))
    with (work / "offline" / "synthetic-1" / "chain.jsonl").open("a") as out:
        out.write('{"i": 4, "cat"')  # a line cut by a crash
    capsys.readouterr()
    assert bench_locomo.main(["--data", str(data), "--work", str(work), "--quiet",
                              "--modes", "chain,full"]) == 0
    assert "| chain | all | 5 |" in capsys.readouterr().out
    assert marker.read_text() == lived  # the chain was not lived again
    again = sorted(p.name for p in marker.parent.joinpath("sessions").glob("*.md"))
    assert set(sessions) <= set(again) and len(again) == len(sessions) + 1  # one question session
    for mode in ("chain", "full"):
        indices = [r["i"] for r in _rows_tolerant(work, mode)]
        assert sorted(indices) == [0, 1, 2, 3, 4] and len(indices) == 5  # each asked once
    # a chain cut short (no marker) is lived again from the start
    marker.unlink()
    assert bench_locomo.main(["--data", str(data), "--work", str(work), "--quiet",
                              "--modes", "chain", "--questions", "1"]) == 0
    assert marker.exists()
    fresh = sorted(p.name for p in marker.parent.joinpath("sessions").glob("*.md"))
    assert not set(fresh) & set(again)


def _rows_tolerant(work: Path, mode: str) -> list[dict[str, Any]]:
    path = work / "offline" / "synthetic-1" / f"{mode}.jsonl"
    out = []
    for line in path.read_text().splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return out


def test_a_models_answers_scored_by_f1(data: Path, tmp_path: Path,
                                       monkeypatch: pytest.MonkeyPatch,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    """(b): the questions go to an OpenAI-compatible server (the real SDK, the local wire
    server); its answers are scored per category by LoCoMo's F1."""
    gold = {"name of Ada's ferret": "Quillon", "Who teaches": "Marguerite",
            "When did Ada adopt": "2 March 2021", "What did Bo build": "a kayak",
            "instrument": "Not mentioned in the conversation"}

    def answer(body: dict[str, Any]) -> Any:
        asked = last_user_text(body)
        return text(next((v for k, v in gold.items() if k in asked), "no idea"))

    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    with WireServer(OpenAIDialect(), responder=answer) as server:
        assert bench_locomo.main(["--data", str(data), "--work", str(tmp_path / "w"),
                                  "--quiet", "--modes", "memory", "--model", "m1",
                                  "--base-url", server.url]) == 0
        asked = [last_user_text(b) for b in server.bodies]
    out = capsys.readouterr().out
    assert "answers by m1" in out
    assert "| memory | single-hop | 1 |" in out and out.count(" 1.000 |") >= 4
    assert "| memory | multi-hop | 1 |" in out and "| 0.500 |" in out  # kayak: 1 of 2 parts
    assert sum("Short answer:" in a for a in asked) == 5
    assert any("Select the correct answer: (a)" in a for a in asked)
