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

A log is a claim, not a verdict: a sample's grade record (score metadata) becomes the cell's
verdict rows, exactly as `grade-run` would write them, only when its tag verifies under this
grader's key (store.claims: the scorer on this machine made it) and it was made by this harness
and engine version, for this script, at the run's seed. Every other cell is left for `grade-run`
to grade again, and the import says how many and why (a private run, whose hidden logs the
scorer never saw, keeps none). Arm, task and sample names are checked (store.names) before
anything is written under them. `import-inspect --verify` re-grades every cell and compares
with what was kept.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from inspect_ai.log import EvalLog, list_eval_logs, read_eval_log

from arrivalbench import __version__
from arrivalbench.agent.generate import cell_of, save_transcript, write_run
from arrivalbench.agent.inspect_task import METADATA, RECORD_TAG, TRANSCRIPT
from arrivalbench.agent.loop import CellResult
from arrivalbench.agent.prompts import ARMS, arm_sha256
from arrivalbench.agent.tool_agent import (
    DEFAULT_SCAFFOLD,
    SCAFFOLDS,
    Budgets,
    agent_arm_sha256,
    cell_from_transcript,
)
from arrivalbench.engines import DEFAULT_ENGINE, ENGINES, Limits, get_engine
from arrivalbench.errors import ArrivalBenchError
from arrivalbench.spec import suite_hash
from arrivalbench.store import RunDir, RunStoreError, check_cell_names, verdict_row
from arrivalbench.store.claims import grader_key, record_is_authentic
from arrivalbench.verdict import RECORD_FORMAT

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
    engine = info.get("engine", DEFAULT_ENGINE)
    if engine not in ENGINES:
        raise InspectLogError(
            f"{path}: engine {engine!r} in its metadata; this ArrivalBench knows "
            f"{', '.join(ENGINES)}: import it with the version that wrote it."
        )
    scaffold = info.get("scaffold", DEFAULT_SCAFFOLD)
    sha = agent_arm_sha256 if scaffold == "agent" else arm_sha256
    if scaffold not in SCAFFOLDS:
        raise InspectLogError(
            f"{path}: scaffold {scaffold!r} in its metadata; this ArrivalBench knows "
            f"{', '.join(SCAFFOLDS)}: import it with the version that wrote it."
        )
    if arm in ARMS and info.get("prompt_sha256") != sha(arm, engine):
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
        **(
            {"scaffold": scaffold, "budgets": info.get("budgets")}
            if scaffold != DEFAULT_SCAFFOLD
            else {}
        ),
    }


def _first_line(text: str) -> str:
    return (text.strip().splitlines() or ["no message"])[0]


def _arm_run(path: Path, log: EvalLog) -> tuple[str, int]:
    info = (log.eval.metadata or {}).get(METADATA) or {}
    run = info.get("run", 1)
    if not isinstance(run, int) or isinstance(run, bool) or run < 1:
        raise InspectLogError(f"{path}: run {run!r} in its metadata; expected a run index from 1.")
    return str(info.get("arm")), run


Claim = tuple[dict[str, Any], object]
"""A scorer's grade record and the tag it came with (None when it has none)."""


def _record(sample: Any) -> Claim | None:
    """The scorer's grade record of a sample and its tag, if it scored one."""
    score = (sample.scores or {}).get("replay")
    metadata = (score.metadata or {}) if score is not None else {}
    record = metadata.get("record")
    return (record, metadata.get(RECORD_TAG)) if isinstance(record, dict) else None


def _cells(path: Path, log: EvalLog) -> list[tuple[CellResult, Claim | None]]:
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
            result = cell_from_transcript(transcript)
            check_cell_names(result.arm, result.task, result.sample, where=where)
        except RunStoreError as exc:
            raise InspectLogError(str(exc)) from None
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
    return import_logs(log_dir, out, seed_commitment)[0]


def log_files_of(sources: Path | Sequence[Path]) -> list[Path]:
    """The log files of several folders or files, in the order given (each folder's oldest
    first), a file named twice read once."""
    given = [Path(sources)] if isinstance(sources, str | Path) else [Path(s) for s in sources]
    found: dict[Path, Path] = {}
    for source in given:
        for path in log_files(source):
            found.setdefault(path.resolve(), path)
    return list(found.values())


def import_logs(
    log_dir: Path | Sequence[Path], out: Path, seed_commitment: str | None = None
) -> tuple[RunDir, KeptVerdicts]:
    """import_inspect, and which scorer verdicts were kept and why the others were not.

    `log_dir` is one log folder or file, or several (an arm pair for the intervention table
    from two `inspect eval` log folders): their logs become one run."""
    files = log_files_of(log_dir)
    results: list[CellResult] = []
    records: dict[tuple[str, str, int], Claim] = {}
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
        scaffold=settings.get("scaffold", DEFAULT_SCAFFOLD),
        budgets=Budgets(**settings["budgets"]) if settings.get("budgets") else None,
    )
    for result in results:
        save_transcript(out, result)
    if seed_commitment is None:
        kept = keep_verdicts(run, results, records, settings["seed"], settings["engine"])
    else:
        graded = sum(r.artifact_sha256 is not None for r in results)
        kept = KeptVerdicts(regrade=Counter({"a private run keeps no scorer verdict": graded}))
    return run, kept


@dataclass
class KeptVerdicts:
    """What an import kept of the scorer's verdicts: rows and cells kept (authenticated), and
    the cells left to grade again, by reason."""

    rows: int = 0
    cells: int = 0
    regrade: Counter[str] = field(default_factory=Counter)

    def summary(self) -> str:
        why = "; ".join(f"{n} {reason}" for reason, n in sorted(self.regrade.items()))
        again = sum(self.regrade.values())
        return (
            f"{self.rows} verdicts of {self.cells} cells kept (authenticated by this grader's "
            f"key), {again} cells to grade again" + (f" ({why})" if why else "")
        )


def _distrust(
    claim: Claim | None, artifact: str, seed: int, engine: str, engine_version: str, key: bytes
) -> str | None:
    """Why a cell's claimed record is not kept; None when it is (authentic and ours to keep)."""
    if claim is None:
        return "no scorer record"
    record, tag = claim
    if tag is None:
        return "no authentication tag"
    if not record_is_authentic(record, tag, key):
        return "a tag this grader's key did not make (forged, altered, or scored elsewhere)"
    if record.get("artifact_sha256") != artifact:
        return "a record of another script"
    if record.get("harness_version") != __version__:
        return "another harness version"
    if record.get("format") != RECORD_FORMAT:
        return "another record format"
    if (
        record.get("engine", DEFAULT_ENGINE) != engine
        or record.get("engine_version") != engine_version
    ):
        return "another engine version"
    if record.get("seed") != seed or "seed_commitment" in record:
        return "another seed"
    return None


def keep_verdicts(
    run: RunDir,
    results: list[CellResult],
    records: dict[tuple[str, str, int], Claim],
    seed: int,
    engine: str = DEFAULT_ENGINE,
) -> KeptVerdicts:
    """Store the scorer's authenticated verdicts as the run's verdict rows.

    A record is kept only when its tag verifies under this grader's key and grade-run would have
    made the same one: this harness, the run's engine at this version, the cell's own script, the
    run's public seed. Every other cell with a script is left for grade-run, its reason counted.
    Timings of kept rows are unknown.
    """
    engine_version = get_engine(engine).version
    key = grader_key()
    rows: list[dict[str, Any]] = []
    kept = KeptVerdicts()
    for result in results:
        cell = cell_of(result)
        if cell.artifact_sha256 is None:
            continue
        claim = records.get(cell.key)
        reason = _distrust(claim, cell.artifact_sha256, seed, engine, engine_version, key)
        if reason is not None:
            kept.regrade[reason] += 1
            continue
        assert claim is not None
        kept.cells += 1
        rows += [
            verdict_row(cell, schedule, seed, entry)
            for schedule, entry in claim[0].get("verdicts", {}).items()
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
    kept.rows = len(rows)
    return kept
