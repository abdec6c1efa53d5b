"""`arrivalbench import-inspect`: Inspect logs of the `arrivalbench/arrivalbench` task as a run directory.

Each sample's store holds its cell's transcript; the cells are rebuilt from those transcripts
and written as `arrivalbench generate` writes a run (cells, artifacts, transcripts, manifest),
so `arrivalbench grade-run` grades it and the report pairs its arms like any generated run.

A run must be complete, as a generated one is: a log whose status is not "success", or a sample
that ended without a transcript (an error under --fail-on-error, a limit), is refused with one
line naming the log file, rather than imported with cells missing. Finish the eval
(`inspect eval-retry LOG`) and import the finished log; a LOG_DIR may also be one log file.
Several logs (one per arm, say) import into one run when they share the model, seed, turns and
suite, and no cell appears twice. Each arm's role and replicate run (`-T run=N`) go to arm_info.

The scorer's verdicts are kept: a sample's grade record (score metadata) becomes the cell's
verdict rows, exactly as `grade-run` would write them, when it was made by this harness and
engine version, for this script, at the run's seed; `grade-run` grades only what is missing
(a private run, whose hidden logs the scorer never saw, keeps none). `import-inspect --verify`
re-grades every cell and compares with what was kept.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from inspect_ai.log import EvalLog, list_eval_logs, read_eval_log

from arrivalbench import __version__
from arrivalbench.agent.generate import cell_of, save_transcript, write_run
from arrivalbench.agent.inspect_task import METADATA, TRANSCRIPT
from arrivalbench.agent.loop import CellResult
from arrivalbench.agent.prompts import ARMS, arm_sha256
from arrivalbench.engines import ENGINES, Limits, get_engine
from arrivalbench.errors import ArrivalBenchError
from arrivalbench.spec import suite_hash
from arrivalbench.store import RunDir, verdict_row

LOG_SUFFIXES = (".eval", ".json")


class InspectLogError(ArrivalBenchError):
    """An Inspect log that cannot become (part of) a run directory."""


def log_files(log_dir: Path) -> list[Path]:
    """The log files under a folder (oldest first), or the one file given."""
    log_dir = Path(log_dir)
    if log_dir.is_file():
        if log_dir.suffix not in LOG_SUFFIXES:
            raise InspectLogError(
                f"{log_dir}: not an Inspect log; give a .eval or .json log, or the folder of them."
            )
        return [log_dir]
    if not log_dir.is_dir():
        raise InspectLogError(
            f"{log_dir}: no such folder; give the --log-dir of 'inspect eval arrivalbench/arrivalbench'."
        )
    files = [
        Path(info.name.removeprefix("file://"))
        for info in list_eval_logs(str(log_dir.resolve()), descending=False)
    ]
    if not files:
        raise InspectLogError(
            f"{log_dir}: no Inspect logs (.eval or .json) here; give the --log-dir of "
            "'inspect eval arrivalbench/arrivalbench'."
        )
    return files


def _settings(path: Path, log: EvalLog) -> dict[str, Any]:
    """The run-level settings of one log, after refusing a log that is not a finished ArrivalBench eval."""
    info = (log.eval.metadata or {}).get(METADATA)
    if not isinstance(info, dict):
        raise InspectLogError(
            f"{path}: a log of task '{log.eval.task}', not of arrivalbench/arrivalbench; "
            "move it out of the folder or import the log file itself."
        )
    if log.status != "success":
        raise InspectLogError(
            f"{path}: status '{log.status}', not 'success'; finish it with "
            f"'inspect eval-retry {path}' and import the finished log, or move this one away."
        )
    if log.samples is None:
        raise InspectLogError(
            f"{path}: written without samples (--no-log-samples); run the eval again with them."
        )
    if info.get("suite_hash") != suite_hash():
        raise InspectLogError(
            f"{path}: made with suite {str(info.get('suite_hash'))[:12]}…, installed suite is "
            f"{suite_hash()[:12]}…; import it with the matching ArrivalBench version and the same "
            "--suite-dir folders (or ARRIVALBENCH_SUITE_PATH) the eval ran with."
        )
    arm = info.get("arm")
    engine = info.get("engine", "duckdb")
    if engine not in ENGINES:
        raise InspectLogError(
            f"{path}: engine {engine!r} in its metadata; this ArrivalBench knows "
            f"{', '.join(ENGINES)}: import it with the version that wrote it."
        )
    if arm in ARMS and info.get("prompt_sha256") != arm_sha256(arm, engine):
        raise InspectLogError(
            f"{path}: made with other prompt texts for arm '{arm}' than the installed ones; "
            "import it with the matching ArrivalBench version."
        )
    return {
        "model": log.eval.model,
        "seed": info["seed"],
        "turns": info["turns"],
        "max_tokens": info.get("max_tokens"),
        "engine": engine,
    }


def _first_line(text: str) -> str:
    return (text.strip().splitlines() or ["no message"])[0]


def _arm_run(path: Path, log: EvalLog) -> tuple[str, int]:
    info = (log.eval.metadata or {}).get(METADATA) or {}
    run = info.get("run", 1)
    if not isinstance(run, int) or isinstance(run, bool) or run < 1:
        raise InspectLogError(f"{path}: run {run!r} in its metadata; expected a run index from 1.")
    return str(info.get("arm")), run


def _record(sample: Any) -> dict[str, Any] | None:
    """The scorer's grade record of a sample, if it scored one."""
    score = (sample.scores or {}).get("replay")
    record = (score.metadata or {}).get("record") if score is not None else None
    return record if isinstance(record, dict) else None


def _cells(path: Path, log: EvalLog) -> list[tuple[CellResult, dict[str, Any] | None]]:
    results = []
    for sample in log.samples or []:
        where = f"{path}: sample {sample.id}"
        if sample.epoch > 1:
            raise InspectLogError(
                f"{where} has epoch {sample.epoch}; ArrivalBench samples come from -T k=N, "
                "run the eval with --epochs 1."
            )
        transcript = sample.store.get(TRANSCRIPT)
        if transcript is None:
            why = (
                f"it errored ({_first_line(sample.error.message)})"
                if sample.error
                else f"it hit the {sample.limit.type} limit"
                if sample.limit
                else "its store holds no transcript"
            )
            raise InspectLogError(
                f"{where} has no cell: {why}; rerun that sample (inspect eval-retry) and import "
                "the finished log."
            )
        try:
            result = CellResult.from_transcript(transcript)
        except (KeyError, TypeError) as exc:
            raise InspectLogError(
                f"{where}: unreadable transcript ({exc!r}); it was not written by this "
                "version of ArrivalBench."
            ) from None
        expected = (
            sample.metadata.get("task"),
            sample.metadata.get("arm"),
            sample.metadata.get("sample"),
        )
        if (result.task, result.arm, result.sample) != expected:
            raise InspectLogError(
                f"{where}: the transcript is of cell {result.task}/{result.arm}/{result.sample}, "
                f"the sample of {expected[0]}/{expected[1]}/{expected[2]}; the log was altered."
            )
        results.append((result, _record(sample)))
    return results


def import_inspect(log_dir: Path, out: Path, seed_commitment: str | None = None) -> RunDir:
    """A run directory at `out` from the finished ArrivalBench logs under `log_dir` (or one log file).

    The logs' seed is the run's public base seed; `seed_commitment` makes the run private.
    """
    files = log_files(log_dir)
    results: list[CellResult] = []
    records: dict[tuple[str, str, int], dict[str, Any]] = {}
    runs: dict[str, int] = {}
    settings: dict[str, Any] | None = None
    first: Path | None = None
    seen: dict[tuple[str, str, int], Path] = {}
    for path in files:
        log = read_eval_log(str(path), exclude_fields={"events", "messages", "attachments"})
        these = _settings(path, log)
        if settings is None:
            settings, first = these, path
        elif these != settings:
            differ = ", ".join(
                f"{k} {settings[k]!r} vs {these[k]!r}" for k in settings if settings[k] != these[k]
            )
            raise InspectLogError(
                f"{path}: its {differ} differ from {first}; import each into its own run."
            )
        arm, run_index = _arm_run(path, log)
        if runs.setdefault(arm, run_index) != run_index:
            raise InspectLogError(
                f"{path}: arm {arm} of run {run_index}, but {first} holds run {runs[arm]} of it; "
                "import each run into its own run directory."
            )
        for result, record in _cells(path, log):
            key = (result.arm, result.task, result.sample)
            if record is not None:
                records[key] = record
            if key in seen:
                raise InspectLogError(
                    f"{path}: cell {result.arm}/{result.task}/{result.sample} is also in "
                    f"{seen[key]}; move one of the two logs away."
                )
            seen[key] = path
            results.append(result)
    assert settings is not None
    if not results:
        raise InspectLogError(f"{log_dir}: the logs hold no samples; nothing to import.")
    arms = sorted({r.arm for r in results})
    config = {
        "imported_from": {"inspect_logs": [str(p.resolve()) for p in files]},
        "generation": {
            **settings,
            "arms": arms,
            "tasks": sorted({r.task for r in results}),
            "suite_hash": suite_hash(),
        },
    }
    run = write_run(
        out,
        results,
        model=settings["model"],
        seed=settings["seed"],
        limits=Limits(),
        turns=settings["turns"],
        config=config,
        seed_commitment=seed_commitment,
        runs=runs,
        engine=settings["engine"],
    )
    for result in results:
        save_transcript(out, result)
    if seed_commitment is None:
        keep_verdicts(run, results, records, settings["seed"], settings["engine"])
    return run


def keep_verdicts(
    run: RunDir,
    results: list[CellResult],
    records: dict[tuple[str, str, int], dict[str, Any]],
    seed: int,
    engine: str = "duckdb",
) -> int:
    """Store the scorer's verdicts as the run's verdict rows; returns how many rows were kept.

    A record is kept only when grade-run would have made the same one: this harness, the run's
    engine at this version, the cell's own script, the run's public seed. Timings of kept rows
    are unknown.
    """
    engine_version = get_engine(engine).version
    rows: list[dict[str, Any]] = []
    for result in results:
        cell = cell_of(result)
        record = records.get(cell.key)
        if (
            record is None
            or cell.artifact_sha256 is None
            or record.get("artifact_sha256") != cell.artifact_sha256
            or record.get("harness_version") != __version__
            or record.get("engine", "duckdb") != engine
            or record.get("engine_version") != engine_version
            or record.get("seed") != seed
            or "seed_commitment" in record
        ):
            continue
        rows += [
            verdict_row(cell, schedule, seed, entry)
            for schedule, entry in record.get("verdicts", {}).items()
        ]
    if rows:
        timings = [
            {
                **{k: r[k] for k in ("arm", "task", "sample", "schedule")},
                "wall_seconds": None,
                "statement_seconds": None,
            }
            for r in rows
        ]
        run.append(rows, timings)
        run.compact()
    return len(rows)
