"""Seeds: stable derivation, and the private (official) seed that keeps the hidden logs secret.

A run made with a seed file must carry no seed derived from the secret and no secret, anywhere;
grading it must need the file; the hidden logs must follow the secret and the visible log must
not; and a pipeline that hard-codes the public seed's expected table must fail a private run.
"""

from __future__ import annotations

import hashlib
import json
import stat
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from arrivalbench.engines import get_engine
from arrivalbench.errors import ScheduleError, UsageError
from arrivalbench.grade import Grader
from arrivalbench.logs import log_seed, task_log
from arrivalbench.oracle import compute_oracle
from arrivalbench.schedules import (
    build_schedule,
    load_schedule_file,
    schedule_from_json,
    schedule_to_json,
)
from arrivalbench.seeds import (
    DEFAULT_SEED,
    SEED_FILE_ENV,
    PrivateSeed,
    derive_seed,
    read_seed_file,
    resolve_seed_file,
    write_seed_file,
)
from arrivalbench.spec import Task, get_task
from arrivalbench.store import RunDir
from conftest import CliResult

TASK = "daily_revenue"
EXAMPLE_REPLIES = Path(__file__).resolve().parents[1] / "examples" / "replay.json"
HIDDEN = ["single_batch", "in_order_stream", "duplicate_delivery"]


def one_line_error(done: CliResult, *phrases: str) -> None:
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    for phrase in phrases:
        assert phrase in lines[0], lines[0]


def forbidden(secret_file: Path, task_ids: tuple[str, ...] = (TASK,)) -> list[str]:
    """What must never be stored: the secret, its base seed and every hidden log seed it makes."""
    private = read_seed_file(secret_file)
    secret = secret_file.read_text(encoding="ascii").strip()
    return [
        secret,
        str(private.seed),
        *(str(log_seed(t, "hidden", private.seed)) for t in task_ids),
    ]


def leaks(folder: Path, needles: list[str]) -> list[str]:
    """Files under `folder` whose bytes, or whose decoded Parquet values, contain a needle."""
    found = []
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        data = path.read_bytes()
        texts = [data.decode("utf-8", errors="replace")]
        if path.suffix == ".parquet":
            texts.append(json.dumps(pq.read_table(path).to_pylist(), default=str))
        found += [f"{path}: {n[:16]}" for n in needles for t in texts if n in t]
    return found


@pytest.fixture(scope="module")
def task() -> Task:
    return get_task(TASK)


@pytest.fixture(scope="module")
def secrets_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("secrets")
    write_seed_file(folder / "a.hex")
    write_seed_file(folder / "b.hex")
    return folder


@pytest.fixture(scope="module")
def secret(secrets_dir: Path) -> Path:
    return secrets_dir / "a.hex"


@pytest.fixture(scope="module")
def other_secret(secrets_dir: Path) -> Path:
    return secrets_dir / "b.hex"


# --- derivation and the seed file ---------------------------------------------------------------


def test_derive_seed_is_stable_and_63_bits_unless_asked() -> None:
    assert derive_seed("a", 1) == derive_seed("a", 1) != derive_seed("a", 2)
    assert 0 <= derive_seed("x") < 2**63
    digest = hashlib.sha256(b"daily_revenue|log|hidden|7").digest()
    assert (
        derive_seed("daily_revenue", "log", "hidden", 7) == int.from_bytes(digest[:8], "big") >> 1
    )
    assert derive_seed("x", bits=255) >> (255 - 63) == derive_seed("x")


def test_new_seed_file_is_private_random_and_commits_to_its_content(tmp_path: Path) -> None:
    first, second = write_seed_file(tmp_path / "one"), write_seed_file(tmp_path / "two")
    text = (tmp_path / "one").read_text(encoding="ascii")
    assert len(text.strip()) == 64 and text.endswith("\n")
    assert stat.S_IMODE((tmp_path / "one").stat().st_mode) == 0o600
    assert first.commitment == hashlib.sha256(text.strip().encode()).hexdigest()
    assert first.commitment != second.commitment and first.seed != second.seed
    again = read_seed_file(tmp_path / "one")
    assert (again.seed, again.commitment) == (first.seed, first.commitment)
    assert str(first.seed) not in repr(first) and text.strip() not in repr(first)


def test_new_seed_refuses_to_overwrite(cli, tmp_path: Path) -> None:
    path = tmp_path / "s.hex"
    made = cli("new-seed", "--out", path)
    assert made.returncode == 0, made.stderr
    before = path.read_bytes()
    assert hashlib.sha256(before.strip()).hexdigest() in made.stdout
    one_line_error(cli("new-seed", "--out", path), "already exists")
    assert path.read_bytes() == before


@pytest.mark.parametrize(
    ("content", "phrase"),
    [
        ("42\n", "at least 32 hex digits"),
        ("zz" * 32, "at least 32 hex digits"),
        (None, "not found"),
    ],
)
def test_weak_or_missing_seed_file_is_one_line_naming_the_file(
    cli, tmp_path: Path, task: Task, content: str | None, phrase: str
) -> None:
    path = tmp_path / "weak.hex"
    if content is not None:
        path.write_text(content, encoding="ascii")
    with pytest.raises(UsageError, match=phrase):
        read_seed_file(path)
    done = cli("grade", "-t", TASK, "-p", task.folder / "gold.sql", "--seed-file", path)
    one_line_error(done, str(path), phrase)
    if content:
        assert content.strip() not in done.stderr


def test_seed_file_comes_from_the_flag_or_the_environment(
    secret: Path, other_secret: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(SEED_FILE_ENV, raising=False)
    assert resolve_seed_file(None) is None
    monkeypatch.setenv(SEED_FILE_ENV, str(secret))
    from_env = resolve_seed_file(None)
    assert from_env is not None and from_env.commitment == read_seed_file(secret).commitment
    from_flag = resolve_seed_file(other_secret)
    assert from_flag is not None and from_flag.commitment == read_seed_file(other_secret).commitment


# --- logs and schedules -------------------------------------------------------------------------


def test_hidden_log_follows_the_secret_and_the_visible_log_does_not(
    task: Task, secret: Path, other_secret: Path
) -> None:
    a, b = read_seed_file(secret), read_seed_file(other_secret)
    visible = {
        build_schedule(task, "snapshot", DEFAULT_SEED, p)[1].fingerprint() for p in (None, a, b)
    }
    assert len(visible) == 1
    for name in HIDDEN:
        hidden = [
            build_schedule(task, name, DEFAULT_SEED, p)[1].fingerprint() for p in (None, a, b)
        ]
        assert len(set(hidden)) == 3, name
    assert build_schedule(task, "single_batch", 7, a)[1].fingerprint() == (
        build_schedule(task, "single_batch", DEFAULT_SEED, a)[1].fingerprint()
    )


def test_private_schedule_file_names_the_commitment_not_the_log_seed(
    task: Task, secret: Path, other_secret: Path
) -> None:
    private = read_seed_file(secret)
    schedule, log = build_schedule(task, "duplicate_delivery", DEFAULT_SEED, private)
    data = schedule_to_json(schedule, log)
    text = json.dumps(data)
    assert data["log"]["seed"] is None and data["seed_commitment"] == private.commitment  # type: ignore[index]
    assert not [n for n in forbidden(secret) if n in text]
    rebuilt, rebuilt_log = schedule_from_json(data, task, private=private)
    assert rebuilt == schedule and rebuilt_log.fingerprint() == log.fingerprint()
    with pytest.raises(ScheduleError, match="pass its seed file"):
        schedule_from_json(data, task)
    with pytest.raises(ScheduleError, match="holds another secret"):
        schedule_from_json(data, task, private=read_seed_file(other_secret))
    public, public_log = build_schedule(task, "duplicate_delivery", DEFAULT_SEED)
    assert "seed_commitment" not in schedule_to_json(public, public_log)


def test_schedule_command_with_a_seed_file_writes_no_secret(
    cli, tmp_path: Path, task: Task, secret: Path
) -> None:
    out = tmp_path / "dup.json"
    made = cli(
        "schedule", "-t", TASK, "-s", "duplicate_delivery", "--out", out, "--seed-file", secret
    )
    assert made.returncode == 0, made.stderr
    assert not leaks(tmp_path, forbidden(secret))
    control = task.folder / "controls" / "dedup_history_only.sql"
    one_line_error(
        cli("grade", "-t", TASK, "-p", control, "--schedule-file", out), "--seed-file", str(out)
    )
    replayed = cli(
        "grade", "-t", TASK, "-p", control, "--schedule-file", out, "--json", "--seed-file", secret
    )
    assert replayed.returncode == 0, replayed.stderr
    record = json.loads(replayed.stdout)
    assert record["seed_commitment"] == read_seed_file(secret).commitment
    loaded, _ = load_schedule_file(str(out), task, read_seed_file(secret))
    assert record["seed"] == loaded.seed
    with Grader(private=read_seed_file(secret)) as grader:
        named, _ = grader.grade(task, control.read_text(), ["duplicate_delivery"])
    assert record["verdicts"] == named["verdicts"]


def test_grade_with_a_seed_file_marks_the_record_and_keeps_the_snapshot(
    task: Task, secret: Path
) -> None:
    private = read_seed_file(secret)
    with Grader() as public, Grader(private=private) as official:
        plain, _ = public.grade(task, task.gold_sql, ["snapshot", "single_batch"])
        marked, _ = official.grade(task, task.gold_sql, ["snapshot", "single_batch"])
        snapshot_only, _ = official.grade(task, task.gold_sql, ["snapshot"])
    assert "seed_commitment" not in plain and plain["seed"] == DEFAULT_SEED
    assert marked["seed_commitment"] == private.commitment and marked["seed"] == DEFAULT_SEED
    assert marked["verdicts"]["snapshot"] == plain["verdicts"]["snapshot"]
    assert (
        marked["verdicts"]["single_batch"]["schedule_sha256"]
        != plain["verdicts"]["single_batch"]["schedule_sha256"]
    )
    assert snapshot_only == {**plain, "verdicts": {"snapshot": plain["verdicts"]["snapshot"]}}


# --- the hard-coded answer ------------------------------------------------------------------------


def _literal(value: object) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, bool | int | float):
        return repr(value)
    return "'" + str(value).replace("'", "''") + "'"


def hard_coded(task: Task, base_seed: int) -> str:
    """A pipeline that ignores its input and writes the expected table of the public hidden log."""
    expected = compute_oracle(task, task_log(task, "hidden", base_seed), get_engine())
    rows = ",\n".join(
        "(" + ", ".join(_literal(v) for v in row.values()) + ")" for row in expected.to_pylist()
    )
    columns = ", ".join(expected.column_names)
    target = task.spec.target.name
    return (
        f"CREATE OR REPLACE TABLE {target} AS SELECT * FROM (VALUES\n{rows}\n) AS v({columns});\n"
    )


@pytest.mark.slow
def test_hard_coded_public_oracle_fails_the_hidden_schedules_of_a_private_run(
    cli, tmp_path: Path, task: Task, secret: Path
) -> None:
    folder = tmp_path / "answers"
    folder.mkdir()
    (folder / f"{TASK}.sql").write_text(hard_coded(task, DEFAULT_SEED), encoding="utf-8")
    verdicts = {}
    for name, extra in (("public", []), ("private", ["--seed-file", secret])):
        run = tmp_path / name
        made = cli("import-scripts", folder, "--arm", "cheat", "--out", run, *extra)
        assert made.returncode == 0, made.stderr
        graded = cli("grade-run", run, "--workers", "1", *extra)
        assert graded.returncode == 0, graded.stderr
        rows = RunDir.open(run).verdicts().to_pylist()
        verdicts[name] = {r["schedule"]: r["verdict"] for r in rows}
    hidden = [s for s in verdicts["public"] if s != "snapshot"]
    assert len(hidden) >= 5
    assert {verdicts["public"][s] for s in hidden} == {"PASS"}
    assert {verdicts["private"][s] for s in hidden} == {"FAIL"}


# --- a private run end to end ---------------------------------------------------------------------


def test_grade_run_of_a_private_run_needs_its_seed_file(
    cli, tmp_path: Path, secret: Path, other_secret: Path
) -> None:
    run = tmp_path / "run"
    made = cli("make-corpus", "--out", run, "--tasks", TASK, "--seed-file", secret)
    assert made.returncode == 0, made.stderr
    assert "private run" in made.stdout
    one_line_error(cli("grade-run", run), str(run), "--seed-file")
    one_line_error(cli("grade-run", run, "--seed-file", other_secret), str(run), "another")
    one_line_error(
        cli("grade-run", run, "--seed-file", tmp_path / "none.hex"),
        str(run),
        "this run was made with",
    )
    assert sorted(p.name for p in run.iterdir()) == ["artifacts", "cells.parquet", "manifest.json"]


@pytest.fixture(scope="module")
def graded_private(cli, tmp_path_factory: pytest.TempPathFactory, secret: Path) -> RunDir:
    """A one-task reference corpus made with the seed file and graded with it (from the environment)."""
    run = tmp_path_factory.mktemp("private") / "run"
    made = cli("make-corpus", "--out", run, "--tasks", TASK, "--seed-file", secret)
    assert made.returncode == 0, made.stderr
    graded = cli("grade-run", run, "--workers", "2", env={SEED_FILE_ENV: str(secret)})
    assert graded.returncode == 0, graded.stderr
    assert "private run" in graded.stdout and "development run" not in graded.stdout
    return RunDir.open(run)


@pytest.mark.slow
def test_private_run_stores_the_commitment_and_no_seed_of_the_secret(
    graded_private: RunDir, secret: Path
) -> None:
    private = read_seed_file(secret)
    manifest = graded_private.manifest
    assert manifest["seed_commitment"] == private.commitment
    assert manifest["base_seed"] == DEFAULT_SEED
    assert not leaks(graded_private.path, forbidden(secret))
    rows = graded_private.verdicts().to_pylist()
    assert rows and {r["seed"] for r in rows} == {DEFAULT_SEED}
    for row in rows:
        expected = None if row["schedule"] == "snapshot" else private.commitment
        assert row["seed_commitment"] == expected, row["schedule"]
    gold = {r["schedule"]: r["verdict"] for r in rows if r["arm"] == "gold"}
    assert set(gold.values()) == {"PASS"}


@pytest.mark.slow
def test_regrade_verify_of_a_private_run_needs_its_seed_file(
    cli, graded_private: RunDir, secret: Path, other_secret: Path
) -> None:
    path = graded_private.path
    before = (path / "verdicts.parquet").read_bytes()
    one_line_error(cli("regrade", path, "--verify"), str(path), "--seed-file")
    one_line_error(cli("regrade", path, "--verify", "--seed-file", other_secret), "another")
    done = cli("regrade", path, "--verify", "--workers", "2", "--seed-file", secret)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "reproduced byte for byte" in done.stdout
    assert (path / "verdicts.parquet").read_bytes() == before


@pytest.mark.slow
def test_development_and_private_runs_are_named_in_summary_and_report(
    cli, graded_private: RunDir, tmp_path: Path
) -> None:
    from arrivalbench.corpus import make_corpus
    from arrivalbench.report.render import build_report
    from arrivalbench.sweep import sweep

    public = make_corpus(tmp_path / "public", task_ids=[TASK])
    sweep(public, workers=2)
    shown = cli("summary", public.path)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.startswith(f"development run: public base seed {DEFAULT_SEED}")
    private = cli("summary", graded_private.path)
    assert private.returncode == 0, private.stderr
    assert "private run" in private.stdout and "development run" not in private.stdout

    mixed = dict(build_report([public.path, graded_private.path], resamples=100).paragraphs)
    assert "public" in mixed["Development run"] and "private" not in mixed["Development run"]
    assert f"public base seed {DEFAULT_SEED} (development run)" in mixed["Runs"]
    commitment = graded_private.seed_commitment
    assert commitment is not None and f"(commitment {commitment[:12]}…)" in mixed["Runs"]
    official = dict(build_report([graded_private.path], resamples=100).paragraphs)
    assert "Development run" not in official


def test_generated_private_run_writes_no_seed_and_checks_the_public_snapshot(
    cli, tmp_path: Path, secret: Path
) -> None:
    runs = {}
    for name, extra in (("public", []), ("private", ["--seed-file", secret])):
        out = tmp_path / name
        made = cli(
            "generate",
            "--model",
            f"replay:{EXAMPLE_REPLIES}",
            "--tasks",
            TASK,
            "--out",
            out,
            *extra,
        )
        assert made.returncode == 0, made.stderr
        runs[name] = RunDir.open(out)
    private = read_seed_file(secret)
    generated = runs["private"]
    assert generated.seed_commitment == private.commitment
    plan = json.loads((generated.path / "generation.json").read_text(encoding="utf-8"))
    assert plan["seed_commitment"] == private.commitment and plan["seed"] == DEFAULT_SEED
    assert list((generated.path / "transcripts").rglob("*.json"))
    assert not leaks(generated.path, forbidden(secret))
    assert [c.snapshot_by_turn for c in generated.cells()] == [
        c.snapshot_by_turn for c in runs["public"].cells()
    ]
    assert "seed_commitment" not in runs["public"].manifest
    assert "seed_commitment" not in json.loads(
        (runs["public"].path / "generation.json").read_text(encoding="utf-8")
    )


@pytest.mark.slow
def test_gate_with_a_seed_file_gates_the_private_hidden_logs(cli, secret: Path) -> None:
    done = cli("gate", "--tasks", TASK, "--jobs", "1", "--seed-file", secret)
    assert done.returncode == 0, done.stdout + done.stderr
    private = read_seed_file(secret)
    assert f"private seed {private.commitment[:12]}" in done.stdout
    assert "admitted daily_revenue" in done.stdout
    assert not [n for n in forbidden(secret) if n in done.stdout + done.stderr]


def test_a_development_run_refuses_an_explicit_seed_file(cli, tmp_path: Path, secret: Path) -> None:
    run = tmp_path / "dev"
    assert cli("make-corpus", "--out", run, "--tasks", TASK).returncode == 0
    one_line_error(cli("grade-run", run, "--seed-file", secret), "development run", str(run))
    assert not (run / "verdicts.parquet").exists()


def test_private_seed_keeps_more_bits_than_a_derived_seed(secret: Path) -> None:
    """A 63-bit base seed could be searched from a schedule's own seed; the private one cannot."""
    private: PrivateSeed = read_seed_file(secret)
    assert private.seed.bit_length() > 128
