"""How long `memfiles hook EVENT` takes end to end, as an agent runs it: a fresh process per call.

Builds a temporary project (procedures, episodes, insights and other entries, as bench_recall.py does),
indexes it, and times `memfiles hook EVENT < input.json` with recorded inputs (tests/data/hooks/):
warm (a watcher running) for each event that searches, then without a watcher (the hook answers {}
at once: it never opens the store itself). Every figure is a median, printed with its ratio to
`python -c pass` measured in the same run, and the load average, since the machine's speed varies.

    python scripts/bench_hooks.py [--entries 1000] [--runs 15]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_recall import MEMFILES, build  # the same project as the recall benchmark

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "data" / "hooks"
CASES = [
    ("UserPromptSubmit", "user_prompt_submit", {"prompt": "the hook tests fail on a missing module"}),
    ("UserPromptSubmit", "user_prompt_submit_offtopic", {}),
    ("PreToolUse", "pre_tool_use_bash", {}),
    ("PreToolUse", "pre_tool_use_risky", {"tool_input": {"command": "alembic upgrade head # migration"}}),
    ("SessionStart", "session_start_resume", {}),
    ("PostToolUse", "post_tool_use_ok", {}),
    ("PostToolUseFailure", "post_tool_use_failure", {}),
]


def median_seconds(command: list[str], runs: int, inputs: list[str] | None = None) -> float:
    times = []
    for n in range(runs):
        start = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True, text=True, input=inputs[n] if inputs else None)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def inputs(name: str, changes: dict, runs: int, cwd: Path) -> list[str]:
    """One input per run, each of its own session, so that no call is cut short by the session's memory."""
    data = json.loads((FIXTURES / f"{name}.json").read_text())
    return [json.dumps({**data, **changes, "cwd": str(cwd), "session_id": f"bench-{name}-{n}"}) for n in range(runs)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--entries", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    rows: list[tuple[str, float]] = []
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        build(root, args.entries)
        (root / "memory" / "memfiles.toml").write_text("hooks_watch = false\nhooks_timeout = 60\n")
        env_root = ["--root", str(root)]
        base = median_seconds([sys.executable, "-c", "pass"], args.runs)
        rows.append(("python -c pass (baseline)", base))
        subprocess.run([MEMFILES, *env_root, "watch"], check=True, capture_output=True)
        try:
            for event, name, changes in CASES:
                command = [MEMFILES, *env_root, "hook", event]
                warmup = inputs(name, changes, 1, root)
                subprocess.run(command, check=True, capture_output=True, text=True, input=warmup[0])
                seconds = median_seconds(command, args.runs, inputs(name, changes, args.runs, root))
                rows.append((f"{event} ({name}), warm", seconds))
            recall = [MEMFILES, *env_root, "recall", "the hook tests fail on a missing module", "--json"]
            rows.append(("for comparison: memfiles recall --trigger turn, warm", median_seconds(recall, args.runs)))
        finally:
            subprocess.run([MEMFILES, *env_root, "watch", "--stop"], capture_output=True)
        time.sleep(0.5)
        command = [MEMFILES, *env_root, "hook", "UserPromptSubmit"]
        rows.append(
            (
                "UserPromptSubmit, no watcher (answers {})",
                median_seconds(command, args.runs, inputs("user_prompt_submit", {}, args.runs, root)),
            )
        )
    load = ", ".join(f"{value:.1f}" for value in os.getloadavg())
    print(f"memfiles hook, {args.entries} entries, median of {args.runs} runs (a fresh process each); load {load}\n")
    print("| what | median | ratio to baseline |")
    print("|---|---|---|")
    for label, seconds in rows:
        print(f"| {label} | {seconds * 1000:.0f} ms | {seconds / base:.1f}× |")


if __name__ == "__main__":
    main()
