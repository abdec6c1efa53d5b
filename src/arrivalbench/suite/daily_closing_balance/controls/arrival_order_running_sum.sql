-- Keeps every movement once with its arrival position, runs the balance in that order, and takes
-- the balance after the last movement received for each account-day as its closing balance.
CREATE TABLE IF NOT EXISTS ledger_history (
    event_id    BIGINT PRIMARY KEY,
    arrival_seq BIGINT,
    ts_event    TIMESTAMP,
    account_id  INTEGER,
    amount      DECIMAL(12,2)
);

INSERT OR IGNORE INTO ledger_history
SELECT DISTINCT ON (event_id) event_id, _arrival_seq, ts_event, account_id, amount
FROM ledger_batch
ORDER BY event_id, _arrival_seq;

CREATE OR REPLACE TABLE daily_closing_balance AS
SELECT account_id, day, running AS closing_balance
FROM (
    SELECT account_id,
           CAST(ts_event AS DATE) AS day,
           arrival_seq,
           CAST(SUM(amount) OVER (PARTITION BY account_id ORDER BY arrival_seq) AS DECIMAL(18,2)) AS running
    FROM ledger_history
)
QUALIFY row_number() OVER (PARTITION BY account_id, day ORDER BY arrival_seq DESC) = 1;
