-- The repaired pipeline: every movement of every kind is kept once in a history table, and the
-- balances are recomputed from that history after each load.
CREATE TABLE IF NOT EXISTS ledger_movements (
    event_id   BIGINT PRIMARY KEY,
    account_id INTEGER,
    kind       VARCHAR,
    amount     DECIMAL(12,2)
);

INSERT OR IGNORE INTO ledger_movements
SELECT DISTINCT ON (event_id) event_id, account_id, kind, amount
FROM ledger_batch
ORDER BY event_id, _arrival_seq;

CREATE OR REPLACE TABLE account_balance AS
SELECT account_id,
       CAST(SUM(amount) AS DECIMAL(18,2)) AS balance,
       COUNT(*)                           AS movements
FROM ledger_movements
GROUP BY account_id;
