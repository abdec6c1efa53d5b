"""Write the example's two sources as Parquet files: orders, and the customers' tier changes.

    python examples/dbt_customers/make_log.py [FOLDER] [--orders N] [--customers C] [--seed S]

`orders.parquet`: one row per order (`order_id` text, `customer_id`, `amount`, `ordered_at`),
over ten days, as examples/dbt_shop's. `customers.parquet`: one row per change of a customer's
tier (`change_id` text, `customer_id`, `tier`, `effective_at`): every customer's first tier,
effective the day before the first order, and about two changes per customer during the ten
days. An order's tier is the one in effect when it was placed.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import duckdb


def make_logs(folder: Path, orders: int = 600, customers: int = 40, seed: int = 7) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    con = duckdb.connect(config={"threads": 1})
    con.execute(f"SELECT setseed({(seed % 1000) / 1000})")
    con.execute(
        f"""COPY (
            SELECT printf('o-%06d', i) AS order_id,
                   1 + (hash(i, {seed}) % {customers})::BIGINT AS customer_id,
                   round(5 + random() * 195, 2)::DECIMAL(10, 2) AS amount,
                   TIMESTAMP '2026-03-01' + to_microseconds((random() * 864e9)::BIGINT) AS ordered_at
            FROM range({orders}) t(i)
            ORDER BY hash(i, {seed})
        ) TO '{folder / "orders.parquet"}' (FORMAT parquet)"""
    )
    tiers = "['bronze', 'silver', 'gold']"
    con.execute(
        f"""COPY (
            WITH changes AS (
                SELECT c AS customer_id, 0 AS n,
                       TIMESTAMP '2026-02-28' + to_microseconds(c * 60_000_000) AS effective_at
                FROM range(1, {customers} + 1) t(c)
                UNION ALL
                SELECT c, n, TIMESTAMP '2026-03-01'
                             + to_microseconds((hash(c, n, {seed}) % 864_000)::BIGINT * 1_000_000)
                FROM range(1, {customers} + 1) t(c), range(1, 3) s(n)
            )
            SELECT printf('c-%04d-%d', customer_id, n) AS change_id, customer_id,
                   {tiers}[1 + (hash(customer_id, n, {seed} + 1) % 3)::BIGINT] AS tier,
                   effective_at
            FROM changes
            ORDER BY hash(customer_id, n, {seed})
        ) TO '{folder / "customers.parquet"}' (FORMAT parquet)"""
    )
    con.close()
    return folder


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", nargs="?", default=".", type=Path)
    parser.add_argument("--orders", type=int, default=600)
    parser.add_argument("--customers", type=int, default=40)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    print(make_logs(args.folder, args.orders, args.customers, args.seed))
