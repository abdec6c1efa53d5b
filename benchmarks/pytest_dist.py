"""How make test's pytest phase shares the cores: whole files per worker against work stealing.

    python benchmarks/pytest_dist.py             # worksteal, then loadfile: ~25 minutes
    python benchmarks/pytest_dist.py --pairs 2   # two of each, alternating

Each run is the whole suite as `make test` runs it (`-m 'slow or not slow'`, one xdist worker per
core), with only the `--dist` mode changed. The machine's own counters (/proc/stat) give the CPU
seconds every process used during the run (the PostgreSQL servers, sandbox workers and dbt
included, which pytest's own accounting misses) and the seconds the cores sat idle. The runs
alternate, so a drift in the machine's speed falls on both modes; the ratio is taken pair by pair.
Writes benchmarks/results/pytest_dist.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
MODES = ("worksteal", "loadfile")


def _cpu_ticks() -> tuple[int, int]:
    """(busy, idle) clock ticks of all cores since boot."""
    with open("/proc/stat", encoding="ascii") as stat:
        fields = [int(v) for v in stat.readline().split()[1:]]
    user, nice, system, idle, iowait, irq, softirq, steal = fields[:8]
    return user + nice + system + irq + softirq + steal, idle + iowait


def run(mode: str) -> dict[str, float | int | str]:
    python = ROOT / ".venv" / "bin" / "python"
    command = [str(python if python.exists() else sys.executable), "-m", "pytest", "-rf"]
    command += ["-m", "slow or not slow", "-n", "auto", "--dist", mode, "-p", "no:cacheprovider"]
    env = {**os.environ, "ARRIVALBENCH_REQUIRE_CHROMIUM": "1"}
    load = os.getloadavg()[0]
    busy0, idle0 = _cpu_ticks()
    started = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    busy1, idle1 = _cpu_ticks()
    tick = os.sysconf("SC_CLK_TCK")
    log = ROOT / "benchmarks" / f"pytest_{mode}.log"  # the whole output, not committed
    log.write_text(done.stdout + done.stderr, encoding="utf-8")
    counts = [line for line in done.stdout.splitlines() if " passed" in line or " failed" in line]
    failed = [line.split()[1] for line in done.stdout.splitlines() if line.startswith("FAILED ")]
    summary = counts[-1].strip("= ") if counts else f"exit {done.returncode}"
    if failed:
        summary += " (failed: " + ", ".join(failed) + ")"
    print(f"{mode}: {wall:.0f} s, exit {done.returncode}, {summary}", flush=True)
    return {
        "mode": mode,
        "wall_seconds": round(wall, 1),
        "busy_cpu_seconds": round((busy1 - busy0) / tick, 1),
        "idle_cpu_seconds": round((idle1 - idle0) / tick, 1),
        "exit": done.returncode,
        "summary": summary,
        "load_before": round(load, 2),
        "load_after": round(os.getloadavg()[0], 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=1)
    parser.add_argument("--render", action="store_true", help="rewrite the .md from the .json")
    args = parser.parse_args()
    if args.render:
        runs = json.loads((RESULTS / "pytest_dist.json").read_text())["runs"]
    else:
        runs = [run(mode) for _ in range(args.pairs) for mode in MODES]
    by = {m: [r for r in runs if r["mode"] == m] for m in MODES}
    wall = [b["wall_seconds"] / a["wall_seconds"] for a, b in zip(*by.values(), strict=True)]
    cpu = [b["busy_cpu_seconds"] / a["busy_cpu_seconds"] for a, b in zip(*by.values(), strict=True)]
    result = {
        "cores": os.cpu_count(),
        "runs": runs,
        "loadfile_over_worksteal_wall": round(statistics.median(wall), 3),
        "loadfile_over_worksteal_cpu": round(statistics.median(cpu), 3),
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "pytest_dist.json").write_text(json.dumps(result, indent=2) + "\n")
    lines = [
        "# pytest's `--dist` mode in make test (benchmarks/pytest_dist.py)",
        "",
        f"{os.cpu_count()} cores; runs alternate, the ratio is loadfile over worksteal, pair by pair.",
        "",
        "| mode | wall s | busy CPU s | idle CPU s | load before → after | tests |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for r in runs:
        lines.append(
            f"| {r['mode']} | {r['wall_seconds']} | {r['busy_cpu_seconds']} | "
            f"{r['idle_cpu_seconds']} | {r['load_before']} → {r['load_after']} | {r['summary']} |"
        )
    lines += [
        "",
        f"loadfile / worksteal: wall **{result['loadfile_over_worksteal_wall']}**, busy CPU "
        f"**{result['loadfile_over_worksteal_cpu']}** (median over pairs).",
        "",
    ]
    (RESULTS / "pytest_dist.md").write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
