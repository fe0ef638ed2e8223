"""What scripts call often, timed as whole processes, side by side in one run: `rollchat
--version`, `rollchat compact ID --json` answered from its cache (its configuration recalled,
and loaded: config/recall.py), the interactive chat's time to its first prompt, and `rollchat
-p` with the offline model (docs/oneshot.md).

Usage: python bench/bench_cli.py [--runs N]
Prints each median and minimum and the ratios the issue sets goals for: compact --json (by id or
by number, with or without --focus) against --version (goal: at most 3x) and -p against the
first prompt (goal: at most 2x).
Needs pexpect (installed with the test extra). Every run is interleaved with the others, so a
busy machine slows them alike.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import pexpect

ROLLCHAT = [sys.executable, "-m", "rollchat"]
FOCUS = "rate limits"


def environment(home: Path) -> dict[str, str]:
    """No API keys (the offline model), the user's directories in ``home``, and byte-code
    caches written and reused as on a user's machine (this sandbox turns them off)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"
           and not k.endswith("_API_KEY") and not k.startswith("ROLLCHAT_")}
    env.update(HOME=str(home), XDG_DATA_HOME=str(home / "data"),
               XDG_CONFIG_HOME=str(home / "config"), XDG_STATE_HOME=str(home / "state"),
               XDG_CACHE_HOME=str(home / "cache"), PROMPT_TOOLKIT_NO_CPR="1", TERM="xterm")
    return env


def timed(args: list[str], cwd: Path, env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(args, check=True, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                   stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


def children_cpu() -> float:
    """CPU time (user + system) of the child processes waited for so far."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def first_prompt(cwd: Path, env: dict[str, str]) -> float:
    """From spawn until the chat's prompt is drawn in a pseudo-terminal."""
    t0 = time.perf_counter()
    child = pexpect.spawn(sys.executable, ["-m", "rollchat"], env=env, cwd=str(cwd),
                          encoding="utf-8", timeout=20)
    child.expect("You:")
    elapsed = time.perf_counter() - t0
    child.sendeof()
    child.expect(pexpect.EOF)
    return elapsed


def prepared(cwd: Path, env: dict[str, str]) -> str:
    """A saved session with its summary cached by `compact`; its id."""
    done = subprocess.run([*ROLLCHAT, "-p", "what is a token bucket?", "--output-format",
                           "json"], check=True, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True)
    session = str(__import__("json").loads(done.stdout)["session_id"])
    for extra in ([], ["--focus", FOCUS]):  # (the offline model writes the focused one)
        subprocess.run([*ROLLCHAT, "compact", session, "--json", *extra], check=True, cwd=cwd,
                       env=env, stdout=subprocess.DEVNULL)
    return session


def loaded(args: list[str], cwd: Path, env: dict[str, str]) -> float:
    """``timed`` with the configuration loaded: the record it was recalled from removed first
    (the run writes it again)."""
    (cwd / "sessions" / ".cache" / "compact" / "config-record").unlink(missing_ok=True)
    return timed(args, cwd, env)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=21)
    runs = parser.parse_args().runs
    with tempfile.TemporaryDirectory() as tmp:
        cwd = Path(tmp)
        env = environment(cwd / "home")
        session = prepared(cwd, env)
        measures: dict[str, Callable[[], float]] = {
            "rollchat --version": lambda: timed([*ROLLCHAT, "--version"], cwd, env),
            "rollchat compact ID --json (cached)": lambda: timed(
                [*ROLLCHAT, "compact", session, "--json"], cwd, env),
            "  the same, configuration loaded": lambda: loaded(
                [*ROLLCHAT, "compact", session, "--json"], cwd, env),
            "  the same, by number (compact 1)": lambda: timed(
                [*ROLLCHAT, "compact", "1", "--json"], cwd, env),
            "  with --focus (cached)": lambda: timed(
                [*ROLLCHAT, "compact", session, "--json", "--focus", FOCUS], cwd, env),
            "  with --focus, by number": lambda: timed(
                [*ROLLCHAT, "compact", "1", "--json", "--focus", FOCUS], cwd, env),
            "first prompt of the chat": lambda: first_prompt(cwd, env),
            "rollchat -p (offline)": lambda: timed(
                [*ROLLCHAT, "-p", "what is a token bucket?", "--no-save"], cwd, env),
        }
        for measure in measures.values():  # warm the caches (files, byte code)
            measure()
        figures: dict[str, list[float]] = {name: [] for name in measures}
        cpu: dict[str, list[float]] = {name: [] for name in measures}  # (the steadier figure
        for _ in range(runs):  # on a machine shared with other work)
            for name, measure in measures.items():
                before = children_cpu()
                figures[name].append(measure())
                cpu[name].append(children_cpu() - before)
    median = {name: statistics.median(values) for name, values in figures.items()}
    print(f"{runs} runs each, interleaved; python {sys.version.split()[0]}, "
          f"{os.cpu_count()} cores")
    for name, values in figures.items():
        print(f"{name:<38} median {median[name] * 1000:7.1f} ms   "
              f"min {min(values) * 1000:7.1f} ms")
    names = list(median)
    version = median[names[0]]
    for name in names[1:6]:
        print(f"{name.strip():<38} / --version: {median[name] / version:.2f}x (goal <= 3)")
    used = {name: statistics.median(values) for name, values in cpu.items()}
    print("CPU time (user + system) of the process, median:")
    for name in names[:6]:
        print(f"  {name.strip():<38} {used[name] * 1000:7.1f} ms  "
              f"{used[name] / used[names[0]]:5.2f}x --version")
    print(f"-p / first prompt:          {median[names[7]] / median[names[6]]:.2f}x (goal <= 2)")


if __name__ == "__main__":
    main()
