-- Tracks each account's closing balance per day; a load's new movements are added to the day they
-- fall on, carried from the newest stored day at or before it. Days stored after it are never
-- revisited. Overdrawn days are listed from that table.
CREATE TABLE IF NOT EXISTS applied_movements (event_id BIGINT PRIMARY KEY);

CREATE TABLE IF NOT EXISTS closing_by_day (
    account_id      INTEGER,
    day             DATE,
    closing_balance DECIMAL(18,2),
    PRIMARY KEY (account_id, day)
);

BEGIN TRANSACTION;

CREATE TEMP TABLE fresh AS
SELECT DISTINCT ON (event_id) event_id, account_id, CAST(ts_event AS DATE) AS day, amount
FROM ledger_batch
WHERE event_id NOT IN (SELECT event_id FROM applied_movements)
ORDER BY event_id, _arrival_seq;

INSERT INTO applied_movements SELECT event_id FROM fresh;

INSERT OR REPLACE INTO closing_by_day
SELECT k.account_id,
       k.day,
       coalesce((SELECT c.closing_balance
                 FROM closing_by_day c
                 WHERE c.account_id = k.account_id AND c.day <= k.day
                 ORDER BY c.day DESC
                 LIMIT 1), 0)
       + (SELECT SUM(f.amount) FROM fresh f WHERE f.account_id = k.account_id AND f.day <= k.day)
FROM (SELECT DISTINCT account_id, day FROM fresh) k;

CREATE OR REPLACE TABLE overdraft_days AS
SELECT account_id, day, closing_balance FROM closing_by_day WHERE closing_balance < 0;

COMMIT;
