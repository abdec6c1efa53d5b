-- Adds the batch's movements whose event_id was not applied in an earlier load to the stored
-- totals, inside one transaction; a movement listed two times in the same load is added two times.
CREATE TABLE IF NOT EXISTS applied_movements (event_id BIGINT);

CREATE TABLE IF NOT EXISTS account_balances (
    account_id       INTEGER PRIMARY KEY,
    balance          DECIMAL(18,2),
    movements        BIGINT,
    last_movement_at TIMESTAMP
);

BEGIN TRANSACTION;

CREATE TEMP TABLE fresh_movements AS
SELECT event_id, ts_event, account_id, amount
FROM ledger_batch
WHERE event_id NOT IN (SELECT event_id FROM applied_movements);

INSERT INTO applied_movements SELECT event_id FROM fresh_movements;

INSERT INTO account_balances
SELECT account_id, SUM(amount), COUNT(*), MAX(ts_event)
FROM fresh_movements
GROUP BY account_id
ON CONFLICT (account_id) DO UPDATE SET
    balance          = account_balances.balance + excluded.balance,
    movements        = account_balances.movements + excluded.movements,
    last_movement_at = greatest(account_balances.last_movement_at, excluded.last_movement_at);

COMMIT;
