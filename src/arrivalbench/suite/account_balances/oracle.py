"""Second oracle for account_balances: per account with a movement, the signed sum of all its
amounts, the number of its movements and the latest ts_event among them.
"""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal

import pyarrow as pa

SCHEMA = pa.schema(
    [
        ("account_id", pa.int32()),
        ("balance", pa.decimal128(18, 2)),
        ("movements", pa.int64()),
        ("last_movement_at", pa.timestamp("us")),
    ]
)


def oracle(tables: dict[str, pa.Table]) -> pa.Table:
    """One pass over the ledger, accumulating each account's balance, count and latest time."""
    balance: dict[int, Decimal] = {}
    movements: dict[int, int] = {}
    last: dict[int, datetime] = {}
    for move in tables["ledger"].to_pylist():
        account = move["account_id"]
        balance[account] = balance.get(account, Decimal(0)) + move["amount"]
        movements[account] = movements.get(account, 0) + 1
        last[account] = max(last.get(account, move["ts_event"]), move["ts_event"])
    rows = [
        {
            "account_id": account,
            "balance": balance[account],
            "movements": movements[account],
            "last_movement_at": last[account],
        }
        for account in balance
    ]
    return pa.Table.from_pylist(rows, schema=SCHEMA)
