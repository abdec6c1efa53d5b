-- Rule control: the gold, except that the amounts of withdrawals and fees are subtracted, though
-- they are already negative (the text says every amount counts with its sign as given).
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
       CAST(SUM(CASE WHEN kind = 'deposit' THEN amount ELSE -amount END) AS DECIMAL(18,2)) AS balance,
       COUNT(*)                           AS movements
FROM ledger_movements
GROUP BY account_id;
