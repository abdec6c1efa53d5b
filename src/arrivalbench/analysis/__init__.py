"""Analysis of graded runs: per-cell outcomes and rates (stats), the repair effect (loopstats),
agreement statistics (agreement), what one script does (idioms) and a run's guard split (guards).

The report (report/) reads runs only through these modules.
"""
