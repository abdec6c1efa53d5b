"""`arrivalbench check`: a user's own pipeline or dbt model, over the user's own log.

The user's log goes through the suite's schedule builders (check.log), each delivery lands in
the user's source table as a batch or an append-only landing table with an optional arrival
column (check.delivery), the SQL pipeline replays in the sandbox worker (check.jobs) and a dbt
model through dbtRunner in the same worker (check.dbt, behind the `dbt` extra), and the final
table is compared with the pipeline's own full refresh or a given oracle (check.verdict,
check.runner). JUnit XML for CI is check.junit, shared with `grade`.
"""

from arrivalbench.check.junit import junit_xml
from arrivalbench.check.log import LogColumns, read_log
from arrivalbench.check.runner import CHECK_SCHEDULES, Check, CheckConfig, exit_code

__all__ = [
    "CHECK_SCHEDULES",
    "Check",
    "CheckConfig",
    "LogColumns",
    "exit_code",
    "junit_xml",
    "read_log",
]
