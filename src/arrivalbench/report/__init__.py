"""The report of graded runs: tables and figures as Markdown, one self-contained HTML page, CSV and LaTeX.

The report only reads. Every number in it comes from stored verdict rows through analysis/
(stats, guards, loopstats, roles), so a report can be rebuilt at any time from the run
directories and reads the same.

    OUT/
      report.md            the tables and the definitions, figures linked from figures/
      report.html          the same page with the figures embedded as PNG, a section per task (each
                           cell's verdicts, SQL, diffs, transcript) and numbers linked to their cells;
                           no external resources
      report.json          every table (printed and as numbers), the arms' roles, every cell, and
                           the fixed list of tests with the arms that entered each
      tables/<key>.csv     each table as numbers (rate, lo, hi as fractions), and tables/<key>.tex
      figures/<key>.png    each figure

analysis.py loads and labels the runs and holds what every block shares (estimates, guard splits);
tables.py and figures.py build one block per function; render.py puts the blocks in reading order
under a header (build_report) and writes them (write_report).
"""

from arrivalbench.report.analysis import ReportInputError, Source, load_sources
from arrivalbench.report.figures import Figure
from arrivalbench.report.render import Report, ReportFiles, build_report, write_report
from arrivalbench.report.tables import Table

__all__ = [
    "Figure",
    "Report",
    "ReportFiles",
    "ReportInputError",
    "Source",
    "Table",
    "build_report",
    "load_sources",
    "write_report",
]
