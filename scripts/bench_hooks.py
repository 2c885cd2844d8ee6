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
from bench_common import compile_memfiles, warm_watcher
from bench_recall import MEMFILES, build  # the same project as the recall benchmark

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "data" / "hooks"
# (event, fixture, changes, pause before each call, whether the call should bring context)
CASES = [
    ("UserPromptSubmit", "user_prompt_submit", {"prompt": "the hook tests fail on a missing module"}, 0.0, True),
    ("UserPromptSubmit", "user_prompt_submit_offtopic", {}, 0.0, False),
    ("PreToolUse", "pre_tool_use_bash", {}, 0.0, False),
    ("PreToolUse", "pre_tool_use_risky", {"tool_input": {"command": "alembic upgrade head # migration"}}, 0.0, False),
    ("SessionStart", "session_start_resume", {}, 0.0, False),
    ("PostToolUse", "post_tool_use_ok", {}, 0.0, False),
    # A failure starts the session's run: the watcher writes it after answering, then indexes the new file.
    # Back to back, each call waits for the last one's write; an agent's tool calls are seconds apart.
    ("PostToolUseFailure", "post_tool_use_failure", {}, 0.0, False),
    ("PostToolUseFailure", "post_tool_use_failure", {}, 2.0, False),
]


ANSWERED = {"count": 0, "calls": 0}  # calls that came back with context, for the events that should get some


def median_seconds(
    command: list[str], runs: int, inputs: list[str] | None = None, gap: float = 0.0, count: bool = False
) -> float:
    times = []
    for n in range(runs):
        time.sleep(gap)
        start = time.perf_counter()
        done = subprocess.run(command, check=True, capture_output=True, text=True, input=inputs[n] if inputs else None)
        times.append(time.perf_counter() - start)
        if count:
            ANSWERED["calls"] += 1
            ANSWERED["count"] += "additionalContext" in done.stdout
    return statistics.median(times)


def inputs(name: str, changes: dict, runs: int, cwd: Path, tag: str = "") -> list[str]:
    """One input per run, each of its own session, so that no call is cut short by the session's memory."""
    data = json.loads((FIXTURES / f"{name}.json").read_text())
    return [
        json.dumps({**data, **changes, "cwd": str(cwd), "session_id": f"bench-{name}-{tag}{n}"}) for n in range(runs)
    ]


def restart(root: Path, env_root: list[str], settings: str) -> None:
    """New settings, and a watcher started for them and brought to its steady state (warm_watcher)."""
    subprocess.run([MEMFILES, *env_root, "watch", "--stop"], capture_output=True)
    (root / "memory" / "memfiles.toml").write_text(settings)
    (root / ".memsearch" / "watch.log").unlink(missing_ok=True)  # the steady-state line must be the new one's
    subprocess.run([MEMFILES, *env_root, "watch"], check=True, capture_output=True)
    warm_watcher(root, [str(Path(MEMFILES).parent / "memsearch"), "warm up"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--entries", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    compile_memfiles()  # measured as installed (scripts/bench_common.py)
    rows: list[tuple[str, float]] = []
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        build(root, args.entries)
        config = root / "memory" / "memfiles.toml"
        config.write_text("hooks_watch = false\n")  # the default hooks_timeout (2 s), as a user has it
        env_root = ["--root", str(root)]
        base = median_seconds([sys.executable, "-c", "pass"], args.runs)
        rows.append(("python -c pass (baseline)", base))
        subprocess.run([MEMFILES, *env_root, "watch"], check=True, capture_output=True)
        try:
            warm_watcher(root, [str(Path(MEMFILES).parent / "memsearch"), "warm up"])  # its torch encoder loaded
            for event, name, changes, gap, should in CASES:
                command = [MEMFILES, *env_root, "hook", event]
                warmup = inputs(name, changes, 1, root, tag=f"w{gap}")
                subprocess.run(command, check=True, capture_output=True, text=True, input=warmup[0])
                runs = inputs(name, changes, args.runs, root, tag=f"g{gap}")
                seconds = median_seconds(command, args.runs, runs, gap=gap, count=should)
                paced = f", {gap:g} s apart" if gap else ""
                rows.append((f"{event} ({name}), warm{paced}", seconds))
            # A watcher exits when the settings change under it: start a new one for the new settings (this row
            # once timed hooks answering {} with no watcher, and 11 of its 11 calls brought no context)
            restart(root, env_root, "hooks_watch = false\nhooks_timeout = 5\n")
            command = [MEMFILES, *env_root, "hook", "UserPromptSubmit"]
            runs = inputs("user_prompt_submit", CASES[0][2], args.runs, root, tag="timeout")
            seconds = median_seconds(command, args.runs, runs, count=True)
            rows.append(("UserPromptSubmit, warm, hooks_timeout set (read once per config change)", seconds))
            restart(root, env_root, "hooks_watch = false\n")
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
    print(f"\n{ANSWERED['count']} of {ANSWERED['calls']} calls that should bring context brought it (none cut short).")


if __name__ == "__main__":
    main()
