-- Keeps movements of every kind at or after the newest movement time already stored (a
-- watermark), so an older movement is dropped; balances are rebuilt from the kept movements.
CREATE TABLE IF NOT EXISTS ledger_movements (
    event_id   BIGINT PRIMARY KEY,
    ts_event   TIMESTAMP,
    account_id INTEGER,
    amount     DECIMAL(12,2)
);

INSERT INTO ledger_movements
SELECT event_id, ts_event, account_id, amount
FROM ledger_batch
WHERE ts_event >= (SELECT coalesce(max(ts_event), TIMESTAMP '1900-01-01') FROM ledger_movements)
QUALIFY row_number() OVER (PARTITION BY event_id ORDER BY _arrival_seq) = 1
ON CONFLICT DO NOTHING;

CREATE OR REPLACE TABLE account_balance AS
SELECT account_id, CAST(SUM(amount) AS DECIMAL(18,2)) AS balance, COUNT(*) AS movements
FROM ledger_movements
GROUP BY account_id;
