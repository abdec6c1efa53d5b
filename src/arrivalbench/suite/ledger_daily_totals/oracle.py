"""Per account and calendar day (date of `ts_event`) with at least one movement: the deposits
(sum of positive deposit amounts), withdrawals and fees (each the sum of `-amount`, so positive),
0 for a kind without movements, and the number of movements of every kind."""

from decimal import Decimal

import pyarrow as pa

SIGN = {"deposit": 1, "withdrawal": -1, "fee": -1}
COLUMN = {"deposit": "deposits", "withdrawal": "withdrawals", "fee": "fees"}


def oracle(tables: dict[str, pa.Table]) -> pa.Table:
    totals: dict[tuple, dict[str, object]] = {}
    for move in tables["ledger"].to_pylist():
        key = (move["account_id"], move["ts_event"].date())
        day = totals.setdefault(
            key,
            {"deposits": Decimal(0), "withdrawals": Decimal(0), "fees": Decimal(0), "movements": 0},
        )
        day["movements"] += 1
        if move["kind"] in COLUMN:
            day[COLUMN[move["kind"]]] += SIGN[move["kind"]] * move["amount"]
    keys = list(totals)
    money = pa.decimal128(18, 2)
    return pa.table(
        {
            "account_id": pa.array([k[0] for k in keys], pa.int32()),
            "day": pa.array([k[1] for k in keys], pa.date32()),
            "deposits": pa.array([totals[k]["deposits"] for k in keys], money),
            "withdrawals": pa.array([totals[k]["withdrawals"] for k in keys], money),
            "fees": pa.array([totals[k]["fees"] for k in keys], money),
            "movements": pa.array([totals[k]["movements"] for k in keys], pa.int64()),
        }
    )
