"""Second oracle for overdraft_days: the account-days with a movement whose closing balance (the
signed sum of the account's amounts dated on or before that day, from 0) is strictly negative.
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
    """Walk each account's movement days in date order, keeping the days that close below 0."""
    net: dict[int, dict[date, Decimal]] = defaultdict(lambda: defaultdict(Decimal))
    for move in tables["ledger"].to_pylist():
        net[move["account_id"]][move["ts_event"].date()] += move["amount"]
    rows = []
    for account, by_day in net.items():
        balance = Decimal(0)
        for day in sorted(by_day):
            balance += by_day[day]
            if balance < 0:
                rows.append({"account_id": account, "day": day, "closing_balance": balance})
    return pa.Table.from_pylist(rows, schema=SCHEMA)
