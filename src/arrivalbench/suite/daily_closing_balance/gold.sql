-- Keep every movement once in a persistent history, then rebuild the closing balances from it:
-- daily net per account, accumulated over days with a window sum.
CREATE TABLE IF NOT EXISTS ledger_history (
    event_id   BIGINT PRIMARY KEY,
    ts_event   TIMESTAMP,
    account_id INTEGER,
    amount     DECIMAL(12,2)
);

INSERT INTO ledger_history
SELECT event_id, ts_event, account_id, amount
FROM ledger_batch
QUALIFY row_number() OVER (PARTITION BY event_id ORDER BY _arrival_seq) = 1
ON CONFLICT DO NOTHING;

CREATE OR REPLACE TABLE daily_closing_balance AS
WITH daily AS (
    SELECT account_id, CAST(ts_event AS DATE) AS day, SUM(amount) AS day_net
    FROM ledger_history
    GROUP BY ALL
)
SELECT account_id,
       day,
       CAST(SUM(day_net) OVER (
           PARTITION BY account_id ORDER BY day ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW
       ) AS DECIMAL(18,2)) AS closing_balance
FROM daily;
