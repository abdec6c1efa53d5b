-- Appends the load's movements whose event_id is not yet stored and rebuilds the overdrawn days;
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

CREATE OR REPLACE TABLE overdraft_days AS
SELECT account_id, day, closing_balance
FROM (
    SELECT account_id,
           CAST(ts_event AS DATE) AS day,
           CAST(SUM(SUM(amount)) OVER (PARTITION BY account_id ORDER BY CAST(ts_event AS DATE)) AS DECIMAL(18,2))
               AS closing_balance
    FROM ledger_history
    GROUP BY account_id, CAST(ts_event AS DATE)
)
WHERE closing_balance < 0;
