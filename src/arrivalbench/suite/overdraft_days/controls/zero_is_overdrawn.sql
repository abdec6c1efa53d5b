-- Rule control: the gold, except that a closing balance of exactly 0 counts as overdrawn (the text
-- says it does not).
CREATE TABLE IF NOT EXISTS ledger_history (
    event_id   BIGINT PRIMARY KEY,
    ts_event   TIMESTAMP,
    account_id INTEGER,
    amount     DECIMAL(12,2)
);

CREATE TABLE IF NOT EXISTS overdraft_days (
    account_id      INTEGER,
    day             DATE,
    closing_balance DECIMAL(18,2),
    PRIMARY KEY (account_id, day)
);

INSERT OR IGNORE INTO ledger_history
SELECT event_id, ts_event, account_id, amount
FROM ledger_batch
QUALIFY row_number() OVER (PARTITION BY event_id ORDER BY _arrival_seq) = 1;

BEGIN TRANSACTION;

DELETE FROM overdraft_days
WHERE account_id IN (SELECT account_id FROM ledger_batch);

INSERT INTO overdraft_days
SELECT account_id, day, closing_balance
FROM (
    SELECT account_id,
           CAST(ts_event AS DATE) AS day,
           SUM(SUM(amount)) OVER (PARTITION BY account_id ORDER BY CAST(ts_event AS DATE)) AS closing_balance
    FROM ledger_history
    WHERE account_id IN (SELECT account_id FROM ledger_batch)
    GROUP BY account_id, CAST(ts_event AS DATE)
)
WHERE closing_balance <= 0;

COMMIT;
