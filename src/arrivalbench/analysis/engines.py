"""One arm graded on two engines: the same cells, verdict by verdict.

A run is graded on one engine (its manifest's `engine`), and the same arm can be graded on
several: the reference corpus is rebuilt per engine (`make-corpus --engine`), a model's stored
scripts can be re-graded elsewhere. Such runs are not replicas: the scripts are the same answers
(or their transpiled text), so a cell on one engine pairs with the cell of the same (task, sample)
on the other, and each schedule both graded pairs one verdict with the other. Whether the engine
changes the verdict is then McNemar's question on PASS against not PASS, over those pairs.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from arrivalbench.analysis.agreement import McNemar, mcnemar
from arrivalbench.analysis.stats import CellOutcome
from arrivalbench.engines import DEFAULT_ENGINE as DEFAULT_ENGINE  # of a manifest without one


@dataclass(frozen=True)
class VerdictPairs:
    """One arm's verdicts on engine A against engine B, paired by (task, sample, schedule).

    `changes` counts each (verdict on A, verdict on B) that differs, `cells` holds the (task,
    sample) of every cell with at least one changed verdict, and `test` is McNemar's test on PASS
    (A) against PASS (B); a FAIL that becomes an ERROR is a change the test does not count.
    """

    pairs: int
    same: int
    pass_a_only: int
    pass_b_only: int
    changes: Counter[tuple[str, str]]
    cells: tuple[tuple[str, int], ...]
    test: McNemar


def verdict_pairs(a: Iterable[CellOutcome], b: Iterable[CellOutcome]) -> VerdictPairs:
    """Pair one arm's cells on two engines by (task, sample), then each schedule graded on both.

    Cells without an artifact on either side, and schedules graded on one side only, pair with
    nothing and are left out.
    """
    other = {(o.task, o.sample): o for o in b if o.artifact}
    first, second, changes, cells = [], [], Counter[tuple[str, str]](), set()
    for o in sorted((o for o in a if o.artifact), key=lambda o: (o.task, o.sample)):
        twin = other.get((o.task, o.sample))
        if twin is None:
            continue
        for schedule in sorted(o.verdicts.keys() & twin.verdicts.keys()):
            va, vb = o.verdicts[schedule], twin.verdicts[schedule]
            first.append(va == "PASS")
            second.append(vb == "PASS")
            if va != vb:
                changes[(va, vb)] += 1
                cells.add((o.task, o.sample))
    test = mcnemar(first, second)
    return VerdictPairs(
        pairs=len(first),
        same=len(first) - sum(changes.values()),
        pass_a_only=test.a_only,
        pass_b_only=test.b_only,
        changes=changes,
        cells=tuple(sorted(cells)),
        test=test,
    )
