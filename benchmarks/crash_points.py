"""What crash_retry costs per replay, by how much of a script changes state; prints a Markdown table.

    PYTHONPATH=src python benchmarks/crash_points.py            # this checkout's rule
    PYTHONPATH=/other/src python benchmarks/crash_points.py     # another checkout's, to compare

One in-process replay (DuckDB, no sandbox worker) of daily_revenue's crash_retry schedule at
the default seed, for (a) the gold script, (b) the gold followed by 1,000 `SELECT 1;` (padding
that changes nothing) and (c) the gold followed by 1,000 INSERTs into a junk table (every
statement changes the committed state, so every boundary is a crash point). It reports wall
seconds, statements executed and how the replay ended; the load average is printed before and
after (the machine may be shared). Results: benchmarks/results/crash_points.md.
"""

from __future__ import annotations

import argparse
import os
import time

from arrivalbench.engines import Limits, get_engine
from arrivalbench.replay import replay
from arrivalbench.schedules import build_schedule
from arrivalbench.seeds import DEFAULT_SEED
from arrivalbench.spec import get_task


def scripts(gold: str, padding: int) -> dict[str, str]:
    junk = "CREATE TABLE IF NOT EXISTS junk (i INTEGER);\n"
    return {
        "(a) gold": gold,
        f"(b) gold + {padding:,} SELECT 1": gold + "SELECT 1;\n" * padding,
        f"(c) gold + {padding:,} INSERTs": gold
        + junk
        + "".join(f"INSERT INTO junk VALUES ({i});\n" for i in range(padding - 1)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--padding", type=int, default=1000)
    parser.add_argument("--replay-timeout", type=float, default=Limits().replay_timeout)
    args = parser.parse_args()
    task = get_task("daily_revenue")
    engine = get_engine("duckdb")
    schedule, log = build_schedule(task, "crash_retry", DEFAULT_SEED)
    limits = Limits(replay_timeout=args.replay_timeout)
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    print("| script | statements | wall s | executed | ended |")
    print("| --- | ---: | ---: | ---: | --- |")
    for name, script in scripts(task.gold_sql, args.padding).items():
        statements = engine.split(script)
        started = time.perf_counter()
        result = replay(engine, statements, schedule, log, task.spec.target.name, limits)
        wall = time.perf_counter() - started
        ended = "ok" if result.error is None else result.error.error_class
        print(
            f"| {name} | {len(statements):,} | {wall:.2f} | {result.statements_run:,} | {ended} |"
        )
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
