"""`arrivalbench check`: your own pipeline or dbt model on your own log, under every schedule;
exit 0 when all PASS, 1 on a FAIL or ERROR."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Annotated, Any

import typer

from arrivalbench.cli.grade import write_junit
from arrivalbench.cli.options import (
    CHECK_LIMITS,
    DEFAULT_ENGINE,
    DEFAULT_SEED,
    CheckMemoryLimitOpt,
    CheckStatementTimeoutOpt,
    JunitOpt,
    RecordJsonOpt,
    ReplayTimeoutOpt,
    SeedOpt,
    is_default_engine,
    read_pipeline,
)
from arrivalbench.cli.output import VERDICT_STYLE, err, out, verdict_table
from arrivalbench.engines import Limits
from arrivalbench.terminal import text


def check(
    log: Annotated[
        str | None,
        typer.Option(
            "--log",
            help="The event log of the one source: a .parquet, .csv or .json file, or "
            "FILE.duckdb:TABLE (several sources: --source NAME=PATH).",
        ),
    ] = None,
    key: Annotated[
        list[str] | None,
        typer.Option(
            "--key",
            help="The column that names an event (any type); per source: NAME=COL (a bare COL "
            "is every other source's).",
        ),
    ] = None,
    event_time: Annotated[
        list[str] | None,
        typer.Option(
            "--event-time",
            help="The event-time column (a timestamp or date); per source: NAME=COL.",
        ),
    ] = None,
    pipeline: Annotated[
        Path | None, typer.Option("--pipeline", "-p", help="The pipeline's SQL file.")
    ] = None,
    source_table: Annotated[
        str | None,
        typer.Option("--source-table", help="The table the pipeline reads deliveries from."),
    ] = None,
    target: Annotated[
        str | None, typer.Option("--target", help="The table the pipeline maintains.")
    ] = None,
    dbt_project: Annotated[
        Path | None, typer.Option("--dbt-project", help="A dbt project folder (never written).")
    ] = None,
    model: Annotated[str | None, typer.Option("--model", help="The dbt model to check.")] = None,
    source: Annotated[
        list[str] | None,
        typer.Option(
            "--source",
            help="With --log, the dbt source the deliveries fill: SOURCE.TABLE. Repeatable as "
            "NAME=PATH for several sources (NAME: the table a pipeline reads, or a dbt "
            "SOURCE.TABLE).",
        ),
    ] = None,
    static: Annotated[
        list[str] | None,
        typer.Option(
            "--static", help="A source delivered once, whole, with the first delivery (repeatable)."
        ),
    ] = None,
    entity_key: Annotated[
        list[str] | None,
        typer.Option(
            "--entity-key",
            help="Column whose events change one entity's state; per source: NAME=COL.",
        ),
    ] = None,
    evolving_column: Annotated[
        list[str] | None,
        typer.Option(
            "--evolving-column",
            help="A column that is NULL early and appears mid-stream (enables schema_evolution); "
            "per source: NAME=COL.",
        ),
    ] = None,
    oracle: Annotated[
        Path | None,
        typer.Option(
            "--oracle", help="A batch query over the complete log (default: a full refresh)."
        ),
    ] = None,
    mode: Annotated[
        str | None,
        typer.Option(
            "--mode",
            help="batch: the source holds only the current delivery; landing: an append-only "
            "landing table (default: batch for --pipeline, landing for --dbt-project).",
        ),
    ] = None,
    arrival_column: Annotated[
        str | None,
        typer.Option(
            "--arrival-column", help="Stamp every delivered row's arrival time in this column."
        ),
    ] = None,
    ignore_column: Annotated[
        list[str] | None,
        typer.Option("--ignore-column", help="A target column left out of the comparison."),
    ] = None,
    schedules: Annotated[
        str | None, typer.Option(help="'all' (default), or comma-separated schedule names.")
    ] = None,
    seed: SeedOpt = DEFAULT_SEED,
    as_json: RecordJsonOpt = False,
    junit: JunitOpt = None,
    statement_timeout: CheckStatementTimeoutOpt = CHECK_LIMITS.statement_timeout,
    memory_limit: CheckMemoryLimitOpt = CHECK_LIMITS.memory_limit,
    replay_timeout: ReplayTimeoutOpt = CHECK_LIMITS.replay_timeout,
    engine: Annotated[
        list[str] | None,
        typer.Option(
            "--engine",
            help="Engine the pipeline runs on: duckdb, sqlite or postgres; its full refresh and "
            "an --oracle query run there too (dbt projects: duckdb or postgres). Give it twice "
            "to see both engines' verdicts side by side.",
            callback=_engines,
        ),
    ] = None,
    startup_timeout: Annotated[
        float,
        typer.Option(
            "--startup-timeout",
            help="Seconds a worker may take to start, parsing the dbt project included "
            "(raise it on a busy machine).",
        ),
    ] = 600.0,
) -> None:
    """Check your own pipeline or dbt model on your own log: exit 0 all PASS, 1 a FAIL or ERROR."""
    from arrivalbench.check import Check, CheckConfig, exit_code
    from arrivalbench.check.sources import source_files, split_source_flags
    from arrivalbench.errors import UsageError
    from arrivalbench.grade import dumps

    legacy, pairs = split_source_flags(source or [])
    if pairs and log is not None:
        raise UsageError(
            "check: give --log PATH (one source) or --source NAME=PATH (several), not both."
        )
    several = bool(pairs)
    if not pairs:
        if log is None:
            raise UsageError(
                "check needs --log PATH (one source) or --source NAME=PATH (repeatable)."
            )
        pairs = [(legacy or source_table or "", log)]
    files = source_files(
        pairs,
        key or [],
        event_time or [],
        entity_key or [],
        evolving_column or [],
        static or [],
        arrival_column,
    )

    engines = list(dict.fromkeys(engine or [DEFAULT_ENGINE]))
    limits = Limits(
        statement_timeout=statement_timeout,
        memory_limit=memory_limit,
        replay_timeout=replay_timeout,
        max_script_bytes=CHECK_LIMITS.max_script_bytes,
    )
    config = CheckConfig(
        log=files[0].where,
        columns=files[0].columns,
        seed=seed,
        limits=limits,
        pipeline=pipeline,
        source_table=source_table,
        target=target,
        dbt_project=dbt_project,
        model=model,
        source=legacy,
        sources=files if several else (),
        mode=mode,  # type: ignore[arg-type]
        schedules=schedules,
        oracle=oracle,
        ignore_columns=tuple(ignore_column or ()),
        engine=engines[0],
        startup_timeout=startup_timeout,
    )
    if startup_timeout <= 0:
        raise UsageError(
            f"--startup-timeout {startup_timeout:g}: give a positive number of seconds."
        )
    if pipeline is not None and not pipeline.exists():
        from arrivalbench.check.log import resolved_hint
        from arrivalbench.errors import PipelineInputError

        raise PipelineInputError(
            f"{pipeline}: pipeline file not found{resolved_hint(pipeline)}; pass the path of a "
            ".sql file."
        )
    script = read_pipeline(pipeline, limits.max_script_bytes) if pipeline is not None else None
    started = time.monotonic()

    def progress(name: str, done: int, total: int, entry: dict[str, Any] | None) -> None:
        if entry is not None:
            verdict = entry["verdict"]
            err.print(
                text(
                    f"check: [{done}/{total}] {name}: ",
                    (verdict, VERDICT_STYLE[verdict]),
                    f" ({time.monotonic() - started:.1f} s)",
                )
            )

    def status(message: str) -> None:
        err.print(text(f"check: {message}"))

    import dataclasses

    from arrivalbench.check.dbt import WorkerStartError

    records: dict[str, dict[str, Any]] = {}
    try:
        for name in engines:
            if len(engines) > 1:
                status(f"on {name}")
            one = dataclasses.replace(config, engine=name)
            records[name], _ = Check(one, on_progress=progress, on_status=status).run(script)
    except WorkerStartError as exc:
        err.print(text(f"arrivalbench: {exc}"), soft_wrap=True)
        raise typer.Exit(1) from None
    except KeyboardInterrupt:  # Typer would turn it into a silent exit 130
        err.print("arrivalbench: interrupted", highlight=False)
        raise typer.Exit(130) from None
    if len(records) > 1:
        if junit is not None:
            for name, record in records.items():
                where = junit.with_name(f"{junit.stem}.{name}{junit.suffix}")
                write_junit(record, f"arrivalbench check {record['task']} on {name}", where)
        if as_json:
            sys.stdout.write(dumps({"engines": records}))
        else:
            side_by_side(records)
            for name, record in records.items():
                print_failures(record, f" on {name}")
        raise typer.Exit(max(exit_code(r) for r in records.values()))
    record = records[engines[0]]
    if junit is not None:
        write_junit(record, f"arrivalbench check {record['task']}", junit)
    if as_json:
        sys.stdout.write(dumps(record))
    else:
        check_table(record)
        print_failures(record)
    raise typer.Exit(exit_code(record))


def _engines(values: list[str] | None) -> list[str] | None:
    """Every --engine checked before the command runs."""
    from arrivalbench.engines import check_engine

    return None if values is None else [check_engine(v) for v in values]


def side_by_side(records: dict[str, dict[str, Any]]) -> None:
    """One row per schedule, one verdict column per engine: an adapter difference shows as a
    row whose verdicts differ."""
    from rich.table import Table

    from arrivalbench.check.junit import summary

    first = next(iter(records.values()))
    table = Table(title=text(f"{first['task']} · mode {first['mode']} · oracle {first['oracle']}"))
    table.add_column("schedule")
    for name, record in records.items():
        table.add_column(f"{name} {record['engine_version']}", overflow="fold")
    for schedule in first["verdicts"]:
        cells = []
        for record in records.values():
            entry = record["verdicts"].get(schedule)
            if entry is None:
                cells.append(text(("—", "dim")))
                continue
            verdict = entry["verdict"]
            detail = summary(entry)
            cells.append(text((verdict, VERDICT_STYLE[verdict]), f" {detail}" if detail else ""))
        table.add_row(text(schedule), *cells)
    for name, reason in first["skipped"].items():
        table.add_row(text(name), *[text(("skipped", "dim"))] * len(records))
        del reason
    out.print(table)


def check_table(record: dict[str, Any]) -> None:
    from arrivalbench.check.junit import summary

    title = f"{record['task']} · mode {record['mode']} · oracle {record['oracle']}"
    if not is_default_engine(record["engine"]):
        title += f" · {record['engine']} {record['engine_version']}"
    table = verdict_table(title, record, summary)
    for name, reason in record["skipped"].items():
        table.add_row(text(name), text(("skipped", "dim")), text(reason))
    out.print(table)


def print_failures(record: dict[str, Any], where: str = "") -> None:
    """Per FAIL, its first differing row and the mistake its shape points to (explain's label
    and sentence), then how to see the whole diff of one schedule."""
    from arrivalbench.check.verdict import first_difference, likely_cause
    from arrivalbench.explain import SENTENCES

    failed = {n: e for n, e in record["verdicts"].items() if e["verdict"] == "FAIL"}
    if not failed:
        return
    out.print(f"Diagnosis{where} (from each diff's shape):", style="dim")
    for name, entry in failed.items():
        diff = entry.get("diff") or {}
        first = first_difference(diff)
        out.print(text(f"  {name}: first differing row: {first or 'none shown'}"), soft_wrap=True)
        label = likely_cause(name, diff)
        if label is not None:
            sentence = SENTENCES[label].split(":")[0].rstrip(".")
            out.print(text(f"    likely {label}: {sentence}."), soft_wrap=True)
    first_failed = next(iter(failed))
    out.print("The whole diff of one schedule:", style="dim")
    out.print(
        text(f"  rerun this command with --schedules {first_failed} --json (its 'diff' field)"),
        soft_wrap=True,
    )
