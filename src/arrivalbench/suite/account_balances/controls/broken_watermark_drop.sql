-- Keeps movements at or after the newest movement time already stored (a watermark), so a
-- movement older than that is dropped; the balances are rebuilt from the kept movements.
CREATE TABLE IF NOT EXISTS movements_kept (
    event_id   BIGINT PRIMARY KEY,
    ts_event   TIMESTAMP,
    account_id INTEGER,
    amount     DECIMAL(12,2)
);

INSERT OR IGNORE INTO movements_kept
SELECT DISTINCT ON (event_id) event_id, ts_event, account_id, amount
FROM ledger_batch
WHERE ts_event >= (SELECT coalesce(max(ts_event), TIMESTAMP '1900-01-01') FROM movements_kept)
ORDER BY event_id, _arrival_seq;

CREATE OR REPLACE TABLE account_balances AS
SELECT account_id,
       CAST(SUM(amount) AS DECIMAL(18,2)) AS balance,
       COUNT(*)                           AS movements,
       MAX(ts_event)                      AS last_movement_at
FROM movements_kept
GROUP BY account_id;
