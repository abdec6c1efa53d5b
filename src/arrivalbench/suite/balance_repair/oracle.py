"""Second oracle for balance_repair: per account with a movement of any kind (fees included), the
signed sum of all its amounts and the number of its movements.
"""

from __future__ import annotations

from collections import Counter
from decimal import Decimal

import pyarrow as pa

SCHEMA = pa.schema(
    [
        ("account_id", pa.int32()),
        ("balance", pa.decimal128(18, 2)),
        ("movements", pa.int64()),
    ]
)


def oracle(tables: dict[str, pa.Table]) -> pa.Table:
    """Every movement counts once, whatever its kind, with the sign it carries."""
    balance: dict[int, Decimal] = {}
    movements: Counter[int] = Counter()
    for move in tables["ledger"].to_pylist():
        account = move["account_id"]
        balance[account] = balance.get(account, Decimal(0)) + move["amount"]
        movements[account] += 1
    rows = [
        {"account_id": account, "balance": total, "movements": movements[account]}
        for account, total in balance.items()
    ]
    return pa.Table.from_pylist(rows, schema=SCHEMA)
