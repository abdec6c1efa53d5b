"""`make demo` as a new user runs it: a fresh clone, the install included, cold and then warm.

    python benchmarks/demo.py            # clones this checkout's HEAD into a temporary folder

Cold: a new clone, no virtual environment, an empty verdict cache and an empty uv cache (so uv
downloads every package from the registry, as on a new machine). Warm: `make demo` again in the
same clone (installed, the cache holding every verdict). Targets (issue 23): <= 150 s cold, the
install included, and <= 30 s warm, on an idle 2-core machine. The machine may be shared: the load
average is printed beside each figure. Writes benchmarks/results/demo.{json,md}.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"


def timed_demo(clone: Path, env: dict[str, str]) -> dict[str, float]:
    """Wall seconds of `make demo` in `clone`, with the load average before and after."""
    before = os.getloadavg()[0]
    started = time.perf_counter()
    done = subprocess.run(["make", "demo"], cwd=clone, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit(
            f"make demo failed ({done.returncode}):\n{done.stdout[-2000:]}{done.stderr[-2000:]}"
        )
    lines = done.stdout.strip().splitlines()
    return {
        "seconds": round(seconds, 1),
        "load_before": round(before, 2),
        "load_after": round(os.getloadavg()[0], 2),
        "last_lines": lines[-8:],
    }


def main() -> None:
    scratch = Path(tempfile.mkdtemp(prefix="arrivalbench-demo-bench-"))
    clone = scratch / "clone"
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True)
    env = {
        **{k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"},
        "ARRIVALBENCH_CACHE_DIR": str(scratch / "verdict-cache"),
        "UV_CACHE_DIR": str(scratch / "uv-cache"),
        "NO_COLOR": "1",
        "COLUMNS": "100",
    }
    cold = timed_demo(clone, env)
    warm = timed_demo(clone, env)
    result = {
        "measured": time.strftime("%Y-%m-%d %H:%M"),
        "cores": os.cpu_count(),
        "commit": subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=clone, capture_output=True, text=True
        ).stdout.strip(),
        "cold": cold,
        "warm": warm,
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "demo.json").write_text(json.dumps(result, indent=2) + "\n")
    rows = "\n".join(
        f"| {kind} | {r['seconds']} | {target} | {r['load_before']} / {r['load_after']} |"
        for kind, r, target in (("cold, install included", cold, "<= 150"), ("warm", warm, "<= 30"))
    )
    (RESULTS / "demo.md").write_text(
        f"# `make demo` from a fresh clone\n\nMeasured {result['measured']} at {result['commit']} on "
        f"{result['cores']} cores (`python benchmarks/demo.py`).\n\n"
        "| run | seconds | target | 1-min load before / after |\n| --- | --- | --- | --- |\n"
        f"{rows}\n\nThe demo's last lines (cold):\n\n```\n"
        + "\n".join(cold["last_lines"])
        + "\n```\n"
    )
    print((RESULTS / "demo.md").read_text())


if __name__ == "__main__":
    main()
