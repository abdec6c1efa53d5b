-- Appends the load's movements whose event_id is not yet stored and rebuilds the closing balances;
-- a movement listed two times in the same load is stored two times.
CREATE TABLE IF NOT EXISTS ledger_history (
    event_id   BIGINT,
    ts_event   TIMESTAMP,
    account_id INTEGER,
    amount     DECIMAL(12,2)
);

INSERT INTO ledger_history
SELECT b.event_id, b.ts_event, b.account_id, b.amount
FROM ledger_batch b
WHERE NOT EXISTS (SELECT 1 FROM ledger_history h WHERE h.event_id = b.event_id);

CREATE OR REPLACE TABLE daily_closing_balance AS
SELECT a.account_id,
       a.day,
       CAST(SUM(h.amount) AS DECIMAL(18,2)) AS closing_balance
FROM (SELECT DISTINCT account_id, CAST(ts_event AS DATE) AS day FROM ledger_history) a
JOIN ledger_history h
  ON h.account_id = a.account_id AND CAST(h.ts_event AS DATE) <= a.day
GROUP BY a.account_id, a.day;
