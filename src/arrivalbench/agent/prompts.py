"""What an agent is told: the system prompt, the task prompt of each arm, and repair feedback.

The texts live in prompts/*.md beside this module and are filled with `string.Template`, so SQL
braces never need escaping. Every arm shares one system prompt and one task prompt; an arm adds
at most one paragraph:

- `unhinted` (role `model`): the task only, what a bare ticket supplies;
- `hint`: one paragraph naming how deliveries go wrong and what the result must equal, at the
  strength of the paper's hint;
- `arch`: a stage-then-derive shape for the script; it names no way deliveries go wrong and says
  nothing about rows that arrive together (the paper's architecture prompt, whose silence there
  is what its displacement finding is about);
- `hint_strong`, `arch_guarded`: the stronger texts of earlier versions (the hint spells out
  where copies land and what a backfill sends; the architecture takes one row per `event_id`
  from the batch itself and replaces the target in a transaction), kept so both can be compared.

Every arm but `unhinted` has role `intervention`. Every text sent in an arm that is not warned
(all but the hints) passes the hazard-vocabulary scan of leak.py; a text that fails it raises
LeakError before any model is called.

The system prompt names the engine the script runs on: `system.md` (DuckDB, the texts of every
earlier run, unchanged), `system.sqlite.md` and `system.postgres.md`, each with the engine's
facts a script needs (types as they arrive, what rebuilds a table, upserts, what is refused).
Every other text is shared; on another engine the existing pipeline of a modify or repair task
is shown in that engine's SQL (dialects.script_for), as its gate runs it.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from string import Template
from typing import Any

from arrivalbench.engines import DEFAULT_ENGINE, engine_info
from arrivalbench.engines import check_engine as check_engine  # the agent modules' validator
from arrivalbench.errors import ArrivalBenchError, UnknownNameError
from arrivalbench.leak import scan
from arrivalbench.spec import Task

PROMPT_DIR = Path(__file__).parent / "prompts"
ARM_PARAGRAPH: dict[str, str | None] = {
    "unhinted": None,
    "hint": "hint.md",
    "arch": "arch.md",
    "hint_strong": "hint_strong.md",
    "arch_guarded": "arch_guarded.md",
}
ARMS: tuple[str, ...] = tuple(ARM_PARAGRAPH)
WARNED = ("hint", "hint_strong")  # arms allowed to name hazards; every other arm is scanned
BASELINE_ARM = "unhinted"
"""The one prompt arm that is the model's own behaviour (role `model`); the rest intervene."""
MAX_EXAMPLE_ROWS = 3


class LeakError(ArrivalBenchError):
    """Hazard vocabulary in a text meant for an arm that must not be warned."""


@cache
def text(name: str) -> str:
    return (PROMPT_DIR / name).read_text(encoding="utf-8")


def _fill(name: str, **values: Any) -> str:
    return Template(text(name)).substitute(values)


def check_arm(arm: str) -> str:
    if arm not in ARMS:
        raise UnknownNameError("arm", arm, ARMS)
    return arm


def system_file(engine: str = DEFAULT_ENGINE) -> str:
    """The system prompt's template for `engine` (DuckDB's keeps its name, and its bytes)."""
    return engine_info(engine).prompt_file


def arm_role(arm: str) -> str:
    """The role of a prompt arm in the analysis: `model` for the unhinted arm, else `intervention`."""
    return "model" if check_arm(arm) == BASELINE_ARM else "intervention"


def arm_sha256(arm: str, engine: str = DEFAULT_ENGINE) -> str:
    """Version of an arm's prompt templates on `engine`: the hash of every text file the arm can
    send (on DuckDB the same hash as before engines were named)."""
    names = [
        system_file(engine),
        "user.md",
        "existing.md",
        "feedback_error.md",
        "feedback_diff.md",
        "feedback_no_code.md",
    ]
    if ARM_PARAGRAPH[check_arm(arm)]:
        names.append(ARM_PARAGRAPH[arm])  # type: ignore[arg-type]
    digest = hashlib.sha256(arm.encode())
    for name in names:
        digest.update(b"\0" + name.encode() + b"\0" + text(name).encode())
    return digest.hexdigest()


@dataclass(frozen=True)
class Prompt:
    arm: str
    system: str
    user: str

    @property
    def sha256(self) -> str:
        """The hash of exactly what opens the conversation; recorded with each cell."""
        return hashlib.sha256(f"{self.arm}\0{self.system}\0{self.user}".encode()).hexdigest()


def _columns(columns: dict[str, str]) -> str:
    return "| column | type |\n| --- | --- |\n" + "\n".join(
        f"| `{c}` | {t} |" for c, t in columns.items()
    )


def build_prompt(task: Task, arm: str, engine: str = DEFAULT_ENGINE) -> Prompt:
    """The opening system and user messages of one cell on `engine`; raises LeakError for a
    warned text in a silent arm."""
    check_arm(arm)
    system = text(system_file(engine))
    existing_sql = task.existing_sql
    if existing_sql and not engine_info(engine).authored:
        from arrivalbench.dialects import script_for

        existing_sql = script_for(task, "existing.sql", existing_sql, engine)  # as the gate runs it
    spec = task.spec
    sources = "\n".join(
        f"`{s.name}`, received in batches as `{s.name}_batch`:\n\n{_columns(s.columns)}"
        for s in spec.sources
    )
    existing = _fill("existing.md", script=existing_sql.strip()) if existing_sql else ""
    batch_tables = " and ".join(f"`{s.name}_batch`" for s in spec.sources)
    user = _fill(
        "user.md",
        title=spec.title,
        description=spec.description.strip(),
        sources=sources,
        target=spec.target.name,
        key="(" + ", ".join(f"`{k}`" for k in spec.target.key) + ")",
        target_columns=_columns(spec.target.columns),
        existing=existing,
        batch_tables=batch_tables,
    )
    if ARM_PARAGRAPH[arm]:
        user = user.rstrip("\n") + "\n\n" + text(ARM_PARAGRAPH[arm])  # type: ignore[arg-type]
    prompt = Prompt(arm=arm, system=system, user=user)
    guard(arm, prompt.system, f"system prompt of arm {arm} on {engine}")
    guard(arm, prompt.user, f"task prompt of {task.id} in arm {arm}")
    return prompt


def guard(arm: str, message: str, what: str) -> None:
    """Raise LeakError when a silent arm would be sent hazard vocabulary."""
    if arm in WARNED:
        return
    leaks = scan(message)
    if leaks:
        first = leaks[0]
        raise LeakError(
            f"{what}: hazard term {first.term!r} on line {first.line} ({first.context!r}); "
            f"the {arm} arm must not be warned — reword the text (leak.py lists the vocabulary)."
        )


# -- feedback ---------------------------------------------------------------------------------


def error_feedback(entry: dict[str, Any]) -> str:
    """The engine's error verbatim, with where it happened; never names a schedule."""
    where = []
    if entry.get("statement"):
        where.append(f"statement {entry['statement']}")
    where.append(
        {
            "timeout": "the statement ran out of time",
            "sandbox_refused": "the script was refused before running",
            "missing_target": "the target table did not exist afterwards",
            "engine_crash": "the database process stopped",
            "result_too_large": "the target table was far larger than expected",
        }.get(entry.get("error_class", ""), "SQL error")
    )
    return _fill(
        "feedback_error.md", where=", ".join(where), message=str(entry.get("message", "")).strip()
    )


def _row(row: dict[str, Any]) -> str:
    return ", ".join(f"{k}={_value(v)}" for k, v in row.items())


def _value(v: Any) -> str:
    return "NULL" if v is None else repr(v) if isinstance(v, str) else str(v)


def diff_feedback(entry: dict[str, Any], target: str) -> str:
    """A typed summary of a wrong table: counts per kind of difference and up to three example rows each."""
    diff = entry.get("diff", {})
    counts = diff.get("counts", {})
    examples = diff.get("examples", {})
    lines: list[str] = []
    if counts.get("schema"):
        schema = (examples.get("schema") or [{}])[0]
        for label, key in (
            ("missing columns", "missing_columns"),
            ("unexpected columns", "extra_columns"),
            ("columns named more than once", "ambiguous_columns"),
        ):
            if schema.get(key):
                lines.append(f"- {label}: {', '.join(schema[key])}")
    if counts.get("missing"):
        lines.append(f"- {counts['missing']} expected rows are absent, for example:")
        lines += [f"    {_row(r)}" for r in examples.get("missing", [])[:MAX_EXAMPLE_ROWS]]
    if counts.get("extra"):
        lines.append(f"- {counts['extra']} rows are present but not expected, for example:")
        lines += [f"    {_row(r)}" for r in examples.get("extra", [])[:MAX_EXAMPLE_ROWS]]
    if counts.get("duplicate_key"):
        lines.append(
            f"- {counts['duplicate_key']} keys occur a different number of times than expected, for example:"
        )
        lines += [
            f"    {_row({k: v for k, v in r.items() if k not in ('expected_rows', 'actual_rows')})}: "
            f"expected {r.get('expected_rows')} row(s), found {r.get('actual_rows')}"
            for r in examples.get("duplicate_key", [])[:MAX_EXAMPLE_ROWS]
        ]
    if counts.get("changed"):
        columns = diff.get("changed_columns", {})
        which = f" (columns: {', '.join(columns)})" if columns else ""
        lines.append(
            f"- {counts['changed']} rows have the expected key but other values{which}, for example:"
        )
        for r in examples.get("changed", [])[:MAX_EXAMPLE_ROWS]:
            values = "; ".join(
                f"{c} expected {_value(v['expected'])}, found {_value(v['actual'])}"
                for c, v in r["columns"].items()
            )
            lines.append(f"    {_row(r['key'])}: {values}")
    return _fill(
        "feedback_diff.md",
        target=target,
        expected_rows=diff.get("expected_rows", "?"),
        actual_rows=diff.get("actual_rows", "?"),
        details="\n".join(lines) + "\n",
    )


def no_code_feedback() -> str:
    return text("feedback_no_code.md")
