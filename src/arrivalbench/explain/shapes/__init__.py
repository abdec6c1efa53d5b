"""Shapes of pipeline mistakes beyond the delivery hazards (issue 28), one module per diagnosis.

Each module exports one function of its label's name: (task, log, schedule) -> counterfactuals,
the task's target under that mistaken semantics, computed from the task's own oracle (run over
transformed source rows, rewritten at one comparison or bound, or re-run batch by batch). Nothing
here reads the pipeline: a label holds only when the pipeline's final table equals one of them.
"""

from arrivalbench.explain.shapes.boundary_strictness import boundary_strictness
from arrivalbench.explain.shapes.counterfactual import Counterfactual
from arrivalbench.explain.shapes.distinct_summed import distinct_summed
from arrivalbench.explain.shapes.history_by_arrival import history_by_arrival
from arrivalbench.explain.shapes.kept_rows_only import kept_rows_only
from arrivalbench.explain.shapes.sequence_by_arrival import sequence_by_arrival
from arrivalbench.explain.shapes.window_off_by_one import window_off_by_one

__all__ = [
    "Counterfactual",
    "boundary_strictness",
    "distinct_summed",
    "history_by_arrival",
    "kept_rows_only",
    "sequence_by_arrival",
    "window_off_by_one",
]
