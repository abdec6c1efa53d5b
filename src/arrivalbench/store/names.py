"""The names a run directory is built from: arm, task and sample.

Each becomes a folder or a file name under the run (transcripts/<arm>/<task>/<sample>.json), so
one validator decides what is a name, for every importer and for the store itself: no path
separator, no '..', no absolute path, nothing but ASCII letters, digits and a few marks.
"""

from __future__ import annotations

import re

from arrivalbench.store.errors import RunStoreError

ARM_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}", re.ASCII)
"""An arm: letters, digits, '_', '-' or '.', starting with a letter or digit (a folder name)."""
TASK_NAME = re.compile(r"[a-z][a-z0-9_]{0,99}", re.ASCII)
"""A task id, as spec.Identifier spells it."""
SAMPLE_TEXT = re.compile(r"[0-9]{1,9}", re.ASCII)
"""A sample index written in a file name: ASCII digits only ('²' is a digit to str.isdigit)."""

_RULES = {
    "arm": (ARM_NAME, "letters, digits, '_', '-' or '.', starting with a letter or digit", "human"),
    "task": (
        TASK_NAME,
        "lower-case letters, digits and '_', starting with a letter",
        "daily_revenue",
    ),
}


def check_name(kind: str, value: object, where: str = "") -> str:
    """`value` as an arm or task name, or a RunStoreError naming what is wrong and where."""
    pattern, rule, example = _RULES[kind]
    if not isinstance(value, str) or not pattern.fullmatch(value):
        raise RunStoreError(
            f"{_subject(where, kind)} {value!r}: {'an' if kind == 'arm' else 'a'} {kind} name is "
            f"{rule}, at most 100 characters (it names a folder in the run directory), "
            f"e.g. {example}."
        )
    return value


def _subject(where: str, kind: str) -> str:
    """'--arm' for an option, 'FILE: arm' for a file, 'arm' alone."""
    if where.startswith("--"):
        return where
    return f"{where}: {kind}" if where else kind


def check_sample(value: object, where: str = "") -> int:
    """`value` as a sample index (a whole number from 0), or a RunStoreError."""
    if isinstance(value, str) and SAMPLE_TEXT.fullmatch(value):
        return int(value)
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 10**9:
        return value
    raise RunStoreError(
        f"{_subject(where, 'sample')} {value!r}: a sample index is a whole number from 0 to "
        "999999999 in ASCII digits, e.g. 0 or 3."
    )


def check_cell_names(arm: object, task: object, sample: object, where: str = "") -> None:
    """All three names of a cell, checked before anything is written under them."""
    check_name("arm", arm, where)
    check_name("task", task, where)
    check_sample(sample, where)
