"""Account ledger: signed money movements per account (deposits add, withdrawals and fees subtract).

Edge cases (off by default, so a task's log changes only when it asks): `zero_balance_accounts`
sets the last movement of that many accounts to exactly what brings the account's balance back to
0 (a deposit or a withdrawal), so a closing balance of exactly 0 occurs ("below 0" against
"at most 0").
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from pydantic import BaseModel, ConfigDict, Field

from arrivalbench.generators import Generator, cents_to_decimal, register, timestamps, ts_array

KINDS = np.array(["deposit", "withdrawal", "fee"], dtype=object)


class LedgerParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    events: int = Field(300, ge=10, le=10_000_000)
    accounts: int = Field(25, ge=1)
    days: int = Field(10, ge=2)
    start: str = "2026-03-01"
    withdrawal_share: float = Field(0.35, ge=0.0, le=1.0)
    fee_share: float = Field(0.1, ge=0.0, le=1.0)
    zero_balance_accounts: int = Field(0, ge=0)
    """Accounts whose last movement brings their balance to exactly 0."""


def _columns(_: LedgerParams) -> dict[str, str]:
    return {
        "ts_event": "TIMESTAMP",
        "account_id": "INTEGER",
        "kind": "VARCHAR",
        "amount": "DECIMAL(12,2)",
    }


def _build(p: LedgerParams, random: np.random.Generator) -> dict[str, pa.Array]:
    n = p.events
    draw = random.random(n)
    kind = np.where(draw < p.fee_share, 2, np.where(draw < p.fee_share + p.withdrawal_share, 1, 0))
    cents = np.where(kind == 2, random.integers(100, 2_500, n), random.integers(1_000, 50_000, n))
    signed = np.where(kind == 0, cents, -cents)
    ts = timestamps(random, n, p.start, p.days)
    account = random.integers(1, p.accounts + 1, n)
    if p.zero_balance_accounts:  # drawn last: the other columns stay as they were
        _zero_balances(p, random, ts, account, kind, signed)
    return {
        "ts_event": ts_array(ts),
        "account_id": pa.array(account, pa.int32()),
        "kind": pa.array(KINDS[kind], pa.string()),
        "amount": cents_to_decimal(signed),
    }


def _zero_balances(
    p: LedgerParams,
    random: np.random.Generator,
    ts: np.ndarray,
    account: np.ndarray,
    kind: np.ndarray,
    signed: np.ndarray,
) -> None:
    """Make the last movement of some accounts cancel everything before it (in place)."""
    several = np.flatnonzero(np.bincount(account) >= 2)
    chosen = random.choice(several, size=min(p.zero_balance_accounts, len(several)), replace=False)
    for acct in chosen:
        rows = np.flatnonzero(account == acct)
        last = rows[np.argmax(ts[rows])]
        signed[last] = -(signed[rows].sum() - signed[last])
        kind[last] = 0 if signed[last] >= 0 else 1


register(Generator(kind="ledger", params=LedgerParams, columns=_columns, build=_build))
