"""Write the example order log: one row per order, each order once, as a Parquet file.

    python examples/dbt_shop/make_log.py [OUT.parquet] [--orders N] [--seed S] [--days D]

Order ids are text (`o-000123`), unrelated to time; orders spread over ten days (`--days`).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import duckdb


def make_log(out: Path, orders: int = 600, seed: int = 7, days: int = 10) -> Path:
    con = duckdb.connect(config={"threads": 1})
    con.execute(f"SELECT setseed({(seed % 1000) / 1000})")
    con.execute(
        f"""COPY (
            SELECT printf('o-%06d', i) AS order_id,
                   1 + (hash(i, {seed}) % 40)::BIGINT AS customer_id,
                   round(5 + random() * 195, 2)::DECIMAL(10, 2) AS amount,
                   TIMESTAMP '2026-03-01' + to_microseconds((random() * {days * 86_400_000_000})::BIGINT) AS ordered_at
            FROM range({orders}) t(i)
            ORDER BY hash(i, {seed})
        ) TO '{out}' (FORMAT parquet)"""
    )
    con.close()
    return out


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", nargs="?", default="orders.parquet", type=Path)
    parser.add_argument("--orders", type=int, default=600)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--days", type=int, default=10)
    args = parser.parse_args()
    print(make_log(args.out, args.orders, args.seed, args.days))
