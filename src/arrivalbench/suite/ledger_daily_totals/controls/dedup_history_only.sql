-- Stores each movement unless its event_id is already stored, then rebuilds the totals; a
-- movement listed two times in the same load is stored two times.
CREATE TABLE IF NOT EXISTS ledger_seen (
    event_id   BIGINT,
    ts_event   TIMESTAMP,
    account_id INTEGER,
    kind       VARCHAR,
    amount     DECIMAL(12,2)
);

INSERT INTO ledger_seen
SELECT event_id, ts_event, account_id, kind, amount
FROM ledger_batch
WHERE event_id NOT IN (SELECT event_id FROM ledger_seen);

CREATE OR REPLACE TABLE ledger_daily_totals AS
SELECT account_id,
       CAST(ts_event AS DATE) AS day,
       CAST(SUM(CASE WHEN kind = 'deposit' THEN amount ELSE 0 END) AS DECIMAL(18,2))     AS deposits,
       CAST(SUM(CASE WHEN kind = 'withdrawal' THEN -amount ELSE 0 END) AS DECIMAL(18,2)) AS withdrawals,
       CAST(SUM(CASE WHEN kind = 'fee' THEN -amount ELSE 0 END) AS DECIMAL(18,2))        AS fees,
       COUNT(*)                                                                         AS movements
FROM ledger_seen
GROUP BY ALL;
