"""The admissibility gate: a task enters the suite only if its gold, controls, hazards and text hold up.

The verdict matrix is computed once per task and seed (matrix.py: gold, controls, rule controls
and baselines over its schedules); each rule below is one pure function of it (checks.py), and
the report groups violations by cause (violations.py). suite.py runs tasks, seeds and the pool.

- the gold passes the snapshot, both benign controls and every declared hazard;
- every negative control passes the snapshot and both benign controls and fails exactly its
  declared hazards, silently (FAIL, not ERROR; a loud hazard may also ERROR);
- every declared hazard perturbs that task's delivery and is earned: some authored control that
  passes the in-order stream FAILs under it (or ERRORs, for a loud hazard). A verdict change, not
  a diff change: naive baselines never earn a declaration, nor does a control that already fails
  in order, since a pipeline that is wrong anyway tells nothing about the hazard;
- an order-sensitive task declares out_of_order (and so earns it by the rule above);
- the oracle is unambiguous: no repeated key, the same result on shuffled input, on two seeds;
- all of the above hold at every gate seed (seeds.gate_seeds: the base seed and the next two),
  or at those the task scopes its declarations to (`seeds:` in task.yaml; runs at other seeds
  then refuse it). Seed-independent checks (text, existing pipeline) and the naive baselines,
  which never earn a declaration, run at the first seed only;
- every stated rule's control (the gold with only that rule broken) fails some schedule, so the
  data exercises the rule;
- a modify or repair task's existing pipeline does not already pass the snapshot;
- the description carries no hazard vocabulary.
"""

from arrivalbench.gate.checks import CHECKS, check, earned_by, earns
from arrivalbench.gate.matrix import GOLD, ORACLE_SEEDS, Graded, Matrix, describe, task_matrix
from arrivalbench.gate.suite import (
    TaskGate,
    gate_suite,
    gate_task,
    gate_task_at_seeds,
    per_task_pool,
)
from arrivalbench.gate.violations import Violation, ViolationGroup, group_violations

__all__ = [
    "CHECKS",
    "GOLD",
    "ORACLE_SEEDS",
    "Graded",
    "Matrix",
    "TaskGate",
    "Violation",
    "ViolationGroup",
    "check",
    "describe",
    "earned_by",
    "earns",
    "gate_suite",
    "gate_task",
    "gate_task_at_seeds",
    "group_violations",
    "per_task_pool",
    "task_matrix",
]
