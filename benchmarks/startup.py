"""How long the console script takes before it does anything: `--help`, and a bad input's one line.

    python benchmarks/startup.py         # 10 runs of each, after one warm-up

Each command is a whole process (`.venv/bin/arrivalbench` or the one on PATH), timed from start
to exit; the median wall and CPU seconds (user + system of the child) are printed with the load
average. The target (issue 23) is 0.5 s on an idle machine. Writes benchmarks/results/startup.{json,md}.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
RUNS = 10
TARGET_SECONDS = 0.5
COMMANDS = {
    "--help": ["--help"],
    "an unknown task (exit 2)": ["grade", "--task", "no_such_task", "--pipeline", "x.sql"],
    "a seed out of range (exit 2)": ["gate", "--seed", "-1"],
}


def console_script() -> str:
    local = ROOT / ".venv" / "bin" / "arrivalbench"
    found = str(local) if local.exists() else shutil.which("arrivalbench")
    if found is None:
        sys.exit("no arrivalbench console script: run `make install` first")
    return found


def timed(command: list[str]) -> tuple[float, float, int]:
    """(wall seconds, CPU seconds of the child, exit code) of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, check=False)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, done.returncode


def main() -> None:
    script = console_script()
    load_before = os.getloadavg()[0]
    rows = {}
    for name, args in COMMANDS.items():
        timed([script, *args])  # warm-up: the page cache, not the figure
        runs = [timed([script, *args]) for _ in range(RUNS)]
        rows[name] = {
            "wall_median": round(statistics.median(r[0] for r in runs), 3),
            "wall_max": round(max(r[0] for r in runs), 3),
            "cpu_median": round(statistics.median(r[1] for r in runs), 3),
            "exit": runs[0][2],
        }
    result = {
        "measured": time.strftime("%Y-%m-%d %H:%M"),
        "cores": os.cpu_count(),
        "runs": RUNS,
        "load_1min": [round(load_before, 2), round(os.getloadavg()[0], 2)],
        "commands": rows,
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "startup.json").write_text(json.dumps(result, indent=2) + "\n")
    table = "\n".join(
        f"| `arrivalbench {' '.join(COMMANDS[name])}` ({name}) | {r['wall_median']} | "
        f"{r['wall_max']} | {r['cpu_median']} | {r['exit']} |"
        for name, r in rows.items()
    )
    (RESULTS / "startup.md").write_text(
        f"# Start-up of the console script\n\nMeasured {result['measured']} on {result['cores']} "
        f"cores, {RUNS} runs each after a warm-up (`python benchmarks/startup.py`); 1-minute load "
        f"average {result['load_1min'][0]} before, {result['load_1min'][1]} after. Target: "
        f"<= {TARGET_SECONDS} s wall on an idle machine.\n\n"
        "| command | median wall s | max wall s | median CPU s | exit |\n"
        "| --- | --- | --- | --- | --- |\n"
        f"{table}\n"
    )
    print((RESULTS / "startup.md").read_text())


if __name__ == "__main__":
    main()
