-- Stores only movements at or after the newest movement time already stored (a watermark), so an
-- older movement is dropped; the totals are rebuilt from what was stored.
CREATE TABLE IF NOT EXISTS ledger_seen (
    event_id   BIGINT PRIMARY KEY,
    ts_event   TIMESTAMP,
    account_id INTEGER,
    kind       VARCHAR,
    amount     DECIMAL(12,2)
);

INSERT OR IGNORE INTO ledger_seen
SELECT DISTINCT ON (event_id) event_id, ts_event, account_id, kind, amount
FROM ledger_batch
WHERE ts_event >= (SELECT coalesce(max(ts_event), TIMESTAMP '1900-01-01') FROM ledger_seen)
ORDER BY event_id, _arrival_seq;

CREATE OR REPLACE TABLE ledger_daily_totals AS
SELECT account_id,
       CAST(ts_event AS DATE) AS day,
       CAST(SUM(CASE WHEN kind = 'deposit' THEN amount ELSE 0 END) AS DECIMAL(18,2))     AS deposits,
       CAST(SUM(CASE WHEN kind = 'withdrawal' THEN -amount ELSE 0 END) AS DECIMAL(18,2)) AS withdrawals,
       CAST(SUM(CASE WHEN kind = 'fee' THEN -amount ELSE 0 END) AS DECIMAL(18,2))        AS fees,
       COUNT(*)                                                                         AS movements
FROM ledger_seen
GROUP BY ALL;
