-- Adds the batch's unapplied movements to the stored totals, then records their ids as applied in
-- a separate statement; stopping between the two adds the movements again on the rerun.
CREATE TABLE IF NOT EXISTS applied_movements (event_id BIGINT PRIMARY KEY);

CREATE TABLE IF NOT EXISTS account_balances (
    account_id       INTEGER PRIMARY KEY,
    balance          DECIMAL(18,2),
    movements        BIGINT,
    last_movement_at TIMESTAMP
);

INSERT INTO account_balances
SELECT account_id, SUM(amount), COUNT(*), MAX(ts_event)
FROM (
    SELECT DISTINCT ON (event_id) event_id, ts_event, account_id, amount
    FROM ledger_batch
    WHERE event_id NOT IN (SELECT event_id FROM applied_movements)
)
GROUP BY account_id
ON CONFLICT (account_id) DO UPDATE SET
    balance          = account_balances.balance + excluded.balance,
    movements        = account_balances.movements + excluded.movements,
    last_movement_at = greatest(account_balances.last_movement_at, excluded.last_movement_at);

INSERT INTO applied_movements
SELECT DISTINCT event_id FROM ledger_batch
ON CONFLICT DO NOTHING;
