"""Start-up with a framework agent: ``rollchat -p hello examples/X/agent.py`` (load the agent
file, one turn through the framework, the transcript written and summarized locally) against
the framework on its own (``python -c 'import X'``, and the same agent file imported and asked
once by the framework's own call), each a new process against the local wire server.

    .venv/bin/python bench/bench_framework_startup.py --runs 5
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.bench_frameworks import installed  # noqa: E402
from tests.e2e import clean_env  # noqa: E402
from tests.wire_servers import OpenAIDialect, WireServer  # noqa: E402

# the framework's own one-shot call of the example's agent (what its developer runs)
ONE_SHOT = {
    "pydantic_ai": "agent.run_sync('hello')",
    "langchain.agents": "root_agent.invoke({'messages': [('user', 'hello')]})",
    "agents": ("__import__('agents').Runner.run_sync(agent, 'hello', run_config="
               "__import__('agents').RunConfig(tracing_disabled=True))"),
}
EXAMPLES = (("pydantic-ai", "pydantic_ai_agent", "pydantic_ai"),
            ("langgraph", "langgraph_agent", "langchain.agents"),
            ("openai-agents", "openai_agents_agent", "agents"))


def timed(args: list[str], env: dict[str, str], cwd: Path) -> float:
    t0 = time.perf_counter()
    subprocess.run(args, env=env, cwd=cwd, check=True, capture_output=True, timeout=300,
                   input="")
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    runs = parser.parse_args().runs
    with WireServer(OpenAIDialect()) as server, tempfile.TemporaryDirectory() as tmp:
        where = Path(tmp)
        env = clean_env(where / "home", OPENAI_BASE_URL=server.url, OPENAI_API_KEY="bench",
                        OPENAI_AGENTS_DISABLE_TRACING="1")
        for label, example, module in EXAMPLES:
            if not installed(module):
                continue
            agent = ROOT / "examples" / example / "agent.py"
            own = (f"import runpy; g = runpy.run_path({str(agent)!r}); "
                   f"exec({ONE_SHOT[module]!r}, g)")
            cases = {"import": [sys.executable, "-c", f"import {module}"],
                     "framework one-shot": [sys.executable, "-c", own],
                     "rollchat -p": [sys.executable, "-m", "rollchat", "-p", "hello",
                                     str(agent)]}
            took: dict[str, list[float]] = {k: [] for k in cases}
            for _ in range(runs):  # interleaved
                for key, args in cases.items():
                    took[key].append(timed(args, env, where))
            shown = ", ".join(f"{k} {statistics.median(v) * 1000:.0f} ms"
                              for k, v in took.items())
            print(f"{label}: {shown}", flush=True)
    os.environ.pop("OPENAI_BASE_URL", None)


if __name__ == "__main__":
    main()
