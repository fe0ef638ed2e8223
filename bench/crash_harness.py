"""Crash harness: run rollchat (offline, piped, scripted) and SIGKILL it at random moments, then
check the sessions directory: files parse, answered turns are saved, links hold, temp files go.

With ``--signal TERM`` or ``--signal HUP`` the kill is a signal rollchat handles: it must also
exit with 128 + the signal and leave every session it wrote summarized.

Usage: python bench/crash_harness.py --kills 200 --seed 1 [--workers 3] [--fresh]
       [--signal KILL|TERM|HUP]
"""

from __future__ import annotations

import argparse
import os
import random
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from rollchat.errors import RollchatError
from rollchat.storage.store import SessionStore
from rollchat.storage.transcript import parse

TOPICS = ("we decided to use postgres for the queue", "what about the rate limiter?",
          "the cache layer needs a TTL of five minutes", "how do we test the retry logic?",
          "let us rename the billing module", "we agreed on weekly releases",
          "is the parser safe on huge files?", "deploy goes through the staging cluster")
# (regex on a printed line, name): a targeted kill waits for the line, then a short delay.
TRIGGERS = {
    "chat": re.compile(r"You: r\d+ q\d+:"),
    "answered": re.compile(r"Time: "),
    "summary": re.compile(r"Generating session summary"),
    "child": re.compile(r"Starting new session with summary"),
    "resume": re.compile(r"Loading session"),
    "restore": re.compile(r"Restoring context"),
    "exit": re.compile(r"You: exit"),
}
_TMP = re.compile(r"\..+\.md\.tmp-")


@dataclass
class Stats:
    """Counts over the whole harness run."""

    kills: int = 0
    completed: int = 0
    phases: Counter[str] = field(default_factory=Counter)
    files_checked: int = 0
    turns_checked: int = 0
    temp_files_cleaned: int = 0
    violations: list[str] = field(default_factory=list)


@dataclass
class Outcome:
    """One rollchat run: what it printed and whether the kill landed before it ended."""

    lines: list[str]
    killed: bool
    stderr: str


def make_script(rng: random.Random, run: int) -> list[str]:
    """Piped input: chat lines (unique text), compact, resume N, sessions, then exit or EOF."""
    kinds = rng.choices(["chat", "compact", "resume", "sessions"], [5, 1.5, 1.2, 0.4],
                        k=rng.randint(2, 5))
    lines, q = [], 0
    for kind in ["chat", *kinds]:
        if kind == "chat":
            q += 1
            lines.append(f"r{run} q{q}: {rng.choice(TOPICS)}")
        elif kind == "resume":
            lines.append(f"resume {rng.randint(1, 3)}")
        else:
            lines.append(kind)
    if rng.random() < 0.8:
        lines.append("exit")
    return lines


def command_kind(line: str) -> str:
    word = line.split(" ", 1)[0]
    return word if word in ("compact", "resume", "sessions", "exit") else "chat"


def split_by_command(lines: list[str]) -> list[tuple[str | None, list[str]]]:
    """The printed lines grouped under the ``You: ...`` echo of each input line."""
    groups: list[tuple[str | None, list[str]]] = [(None, [])]
    for line in lines:
        if line.startswith("You: "):
            groups.append((line[5:], []))
        else:
            groups[-1][1].append(line)
    return groups


def phase_of(lines: list[str]) -> str:
    """Where the process was when it died, from the last things it printed."""
    cmd, after = split_by_command(lines)[-1]
    if cmd is None:
        return "startup"
    kind = command_kind(cmd)
    saved = any(x.startswith("Saved session") for x in after)
    if kind == "exit" or (kind == "chat" and "Generating session summary..." in after):
        return "exit: done" if saved else "exit: summary + finalize"
    if kind == "chat":
        last = after[-1] if after else ""
        return "turn: answered" if last.startswith("Time: ") else "turn: streaming or saving"
    if kind == "compact":
        if "Starting new session with summary..." in after:
            return "compact: child + restoration"
        return "compact: summary + finalize"
    if kind == "resume":
        if "Restoring context..." in after:
            return "resume: restoration"
        return "resume: load + summarize old"
    return "sessions"


def answered_lines(lines: list[str]) -> list[str]:
    """Chat lines whose answer was printed in full (its ``Time: ...`` footer came out)."""
    return [cmd for cmd, after in split_by_command(lines)
            if cmd is not None and command_kind(cmd) == "chat"
            and any(x.startswith("Time: ") for x in after)]


def rollchat_env(home: Path) -> dict[str, str]:
    """No API keys (offline model), user dirs inside ``home``, wide unbuffered output."""
    env = {k: v for k, v in os.environ.items()
           if not k.endswith("_API_KEY") and not k.startswith(("ROLLCHAT_", "OPENAI_",
                                                                "ANTHROPIC_"))}
    env.update(HOME=str(home), XDG_DATA_HOME=str(home / "data"),
               XDG_CONFIG_HOME=str(home / "config"), COLUMNS="250", PYTHONUNBUFFERED="1")
    return env


def choose_kill(rng: random.Random, script: list[str]) -> tuple[str | None, float]:
    """(trigger name or None for a plain timer, delay in seconds after it / after start)."""
    if rng.random() < 0.35:
        return None, rng.uniform(0.3, 1.6)
    kinds = {command_kind(x) for x in script}
    names = ["chat", "answered", "answered", "summary", "summary", "exit"]
    names += ["child"] * 2 * ("compact" in kinds) + ["resume", "restore"] * ("resume" in kinds)
    name = rng.choice(names)
    if name == "answered":  # the turn is saved within milliseconds of its footer
        return name, rng.uniform(0, 0.004)
    if name == "summary":  # summarizing then the atomic rewrite: ~0.2 s in all
        return name, rng.uniform(0, 0.25)
    return name, rng.uniform(0, 0.03) if rng.random() < 0.7 else rng.uniform(0, 0.4)


def run_once(argv: list[str], script: list[str], env: dict[str, str], cwd: Path,
             trigger: str | None, delay: float, limit: float = 30.0,
             signum: int = signal.SIGKILL) -> Outcome:
    """Run rollchat with ``script`` piped in; send ``signum`` ``delay`` s after the trigger
    line (or after the start). Returns the printed lines, the partial last one included."""
    proc = subprocess.Popen([sys.executable, "-m", "rollchat", *argv], cwd=cwd, env=env,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    assert proc.stdin and proc.stdout and proc.stderr
    proc.stdin.write(("\n".join(script) + "\n").encode())
    proc.stdin.close()
    start = time.monotonic()
    armed = trigger is None  # a targeted kill is armed once its trigger line is printed
    deadline = start + delay if armed else start + limit
    buf, killed, fd = b"", False, proc.stdout.fileno()
    while True:
        wait = deadline - time.monotonic()
        if wait <= 0:
            proc.send_signal(signum)
            killed = True
            break
        ready, _, _ = select.select([fd], [], [], wait)
        if not ready:
            continue
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        buf += chunk
        if not armed and trigger is not None:
            lines = buf[:buf.rfind(b"\n") + 1].decode("utf-8", "replace").splitlines()
            if any(TRIGGERS[trigger].match(x) for x in lines):
                armed, deadline = True, time.monotonic() + delay
    proc.wait()
    buf += proc.stdout.read()
    err = proc.stderr.read().decode("utf-8", "replace")
    proc.stdout.close()
    proc.stderr.close()
    expected = -signal.SIGKILL if signum == signal.SIGKILL else 128 + signum
    # 0: it had just ended by itself; -signum: the signal came before rollchat's handlers were
    # installed (Python starting) or after they were removed (everything saved)
    if killed and proc.returncode not in (expected, 0, -signum):
        err += (f"\nexit status {proc.returncode} after {signal.Signals(signum).name} "
                f"(pid {proc.pid})")
    killed = killed and proc.returncode in (expected, -signum)
    return Outcome(buf.decode("utf-8", "replace").splitlines(), killed, err)


@dataclass
class _FileFacts:
    users: list[str]
    previous: str | None
    resumed_from: str | None
    has_summary: bool


class DirChecker:
    """Checks one sessions directory after each kill; re-parses only the files that changed."""

    def __init__(self, root: Path, graceful: bool = False) -> None:
        self.root = root
        self.graceful = graceful  # every session must end summarized (no SIGKILL)
        self.answered: list[str] = []
        self.lost: set[str] = set()  # each lost turn is reported once
        self._cache: dict[str, tuple[tuple[int, int], _FileFacts | str]] = {}

    def _facts(self, path: Path) -> _FileFacts | str:
        """What a file holds, or why it does not parse."""
        st = path.stat()
        key = (st.st_size, st.st_mtime_ns)
        cached = self._cache.get(path.name)
        if cached is not None and cached[0] == key:
            return cached[1]
        try:
            t = parse(path.read_text(encoding="utf-8"))
            facts: _FileFacts | str = _FileFacts(
                [x.user for x in t.turns if x.kind == "query"], t.header.previous_session,
                t.header.resumed_from, t.summary is not None)
        except (RollchatError, UnicodeDecodeError) as e:
            facts = f"{type(e).__name__}: {e}"
        self._cache[path.name] = (key, facts)
        return facts

    def check(self, stats: Stats, tag: str) -> None:
        """Run every check once (after a kill, before the next start)."""
        bad = stats.violations
        temps = [p for p in self.root.iterdir() if _TMP.match(p.name)]
        SessionStore(self.root).ensure()  # what the next start does
        left = [p.name for p in self.root.iterdir() if _TMP.match(p.name)]
        stats.temp_files_cleaned += len(temps) - len(left)
        bad += [f"{tag}: temporary file {n} left after ensure()" for n in left]
        listing = SessionStore(self.root).list_sessions()
        bad += [f"{tag}: sessions lists {n} as a problem: {why}" for n, why in listing.problems]
        files = {p.name: self._facts(p) for p in sorted(self.root.glob("*.md"))}
        stats.files_checked += len(files)
        if len(listing.sessions) + len(listing.problems) != len(files):
            bad.append(f"{tag}: {len(files)} files but {len(listing.sessions)} sessions listed")
        users: Counter[str] = Counter()
        for name, facts in files.items():
            if isinstance(facts, str):
                bad.append(f"{tag}: {name} does not parse: {facts}")
                continue
            users.update(facts.users)
            bad += self._link_problems(tag, name, facts, files)
            if self.graceful and facts.users and not facts.has_summary:
                bad.append(f"{tag}: {name} has no summary after a graceful signal")
        for line in self.answered:
            stats.turns_checked += 1
            if users[line] != 1 and line not in self.lost:
                self.lost.add(line)
                bad.append(f"{tag}: answered turn {line!r} is in {users[line]} files, not 1")

    def _link_problems(self, tag: str, name: str, facts: _FileFacts,
                       files: dict[str, _FileFacts | str]) -> list[str]:
        if facts.previous is None:
            return []
        parent = files.get(facts.previous)
        if parent is None:
            return [f"{tag}: {name} links to missing {facts.previous}"]
        if facts.resumed_from != facts.previous.removesuffix(".md"):
            return [f"{tag}: {name}: Resumed From {facts.resumed_from} != {facts.previous}"]
        if isinstance(parent, _FileFacts) and not parent.has_summary:
            return [f"{tag}: {name}'s parent {facts.previous} has no summary"]
        return []


@dataclass
class Harness:
    """Settings shared by the workers, and the counts they add to."""

    kills: int
    seed: int
    workers: int = 3
    fresh: bool = False
    rotate: int = 60
    word_delay: float = 0.004
    signum: int = signal.SIGKILL
    stats: Stats = field(default_factory=Stats)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def _claim(self) -> bool:
        with self.lock:
            return self.stats.kills < self.kills

    def worker(self, w: int, base: Path) -> None:
        """Runs until the harness has its kills; one sessions directory per ``rotate`` runs
        (or per run with ``fresh``), so chains grow and old sessions get resumed."""
        rng = random.Random(self.seed * 1009 + w)
        config = base / f"w{w}.yml"
        config.write_text(f"ui:\n  offline_word_delay: {self.word_delay}\n", encoding="utf-8")
        env = rollchat_env(base / f"home{w}")
        graceful = self.signum != signal.SIGKILL
        run, checker = 0, DirChecker(base, graceful)
        while self._claim():
            if run % (1 if self.fresh else self.rotate) == 0:
                checker = DirChecker(base / f"w{w}-sessions-{run}", graceful)
            run += 1
            self.one_run(rng, w, run, checker, config, env, base)

    def one_run(self, rng: random.Random, w: int, run: int, checker: DirChecker,
                config: Path, env: dict[str, str], base: Path) -> None:
        script = make_script(rng, w * 100_000 + run)
        argv = ["--config", str(config), "--sessions-dir", str(checker.root)]
        if checker.root.exists() and rng.random() < 0.1:
            argv += ["--resume", str(rng.randint(1, 2))]
        trigger, delay = choose_kill(rng, script)
        out = run_once(argv, script, env, base, trigger, delay, signum=self.signum)
        checker.root.mkdir(exist_ok=True)
        checker.answered += answered_lines(out.lines)
        with self.lock:
            stats = self.stats
            if out.killed:
                stats.kills += 1
                stats.phases[phase_of(out.lines)] += 1
            else:
                stats.completed += 1
            if "Traceback" in out.stderr or "exit status" in out.stderr:
                stats.violations.append(f"w{w} run {run}: {out.stderr[-300:]}")
            checker.check(stats, f"w{w} run {run} ({phase_of(out.lines)})")

    def run(self) -> Stats:
        base = Path(tempfile.mkdtemp(prefix="rollchat-crash-"))
        try:
            threads = [threading.Thread(target=self.worker, args=(w, base))
                       for w in range(self.workers)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        finally:
            shutil.rmtree(base, ignore_errors=True)
        return self.stats


def report(stats: Stats, seconds: float) -> str:
    lines = [f"kills: {stats.kills} (runs that ended before their kill: {stats.completed})",
             "kills per phase (from what the process printed last):"]
    lines += [f"  {name}: {n}" for name, n in sorted(stats.phases.items())]
    lines += [f"files checked: {stats.files_checked}", f"turns checked: {stats.turns_checked}",
              f"temporary files cleaned at next start: {stats.temp_files_cleaned}",
              f"violations: {len(stats.violations)}", f"time: {seconds:.1f}s"]
    lines += [f"  VIOLATION {v}" for v in stats.violations[:50]]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--kills", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--workers", type=int, default=3)
    ap.add_argument("--fresh", action="store_true", help="a new sessions directory per run")
    ap.add_argument("--rotate", type=int, default=60, help="runs per shared directory")
    ap.add_argument("--word-delay", type=float, default=0.004)
    ap.add_argument("--signal", choices=("KILL", "TERM", "HUP"), default="KILL")
    a = ap.parse_args(argv)
    start = time.monotonic()
    signum = signal.Signals[f"SIG{a.signal}"]
    stats = Harness(a.kills, a.seed, a.workers, a.fresh, a.rotate, a.word_delay,
                    signum).run()
    print(report(stats, time.monotonic() - start))
    return 1 if stats.violations else 0


if __name__ == "__main__":
    sys.exit(main())
