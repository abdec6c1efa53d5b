"""ArrivalBench: grade incremental SQL pipelines by replaying them under adversarial delivery schedules."""

from arrivalbench.errors import ArrivalBenchError

__version__ = "0.1.0"
__all__ = ["ArrivalBenchError", "__version__"]
