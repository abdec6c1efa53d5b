"""Second oracle for daily_closing_balance: for each account and each day on which it has a
movement, the running signed sum of its amounts over every movement dated on or before that day.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import date
from decimal import Decimal

import pyarrow as pa

SCHEMA = pa.schema(
    [
        ("account_id", pa.int32()),
        ("day", pa.date32()),
        ("closing_balance", pa.decimal128(18, 2)),
    ]
)


def oracle(tables: dict[str, pa.Table]) -> pa.Table:
    """Net movement per account-day, then a running total over each account's days in date order."""
    net: dict[int, dict[date, Decimal]] = defaultdict(lambda: defaultdict(Decimal))
    for move in tables["ledger"].to_pylist():
        net[move["account_id"]][move["ts_event"].date()] += move["amount"]
    rows = []
    for account, by_day in net.items():
        balance = Decimal(0)
        for day in sorted(by_day):
            balance += by_day[day]
            rows.append({"account_id": account, "day": day, "closing_balance": balance})
    return pa.Table.from_pylist(rows, schema=SCHEMA)
