-- For each account-day in the load, takes the stored closing balance of the account's newest day
-- at or before it and adds the load's movements up to that day; stored days after it are never
-- revisited, as if every load only extended the past.
CREATE TABLE IF NOT EXISTS applied_movements (event_id BIGINT PRIMARY KEY);

CREATE TABLE IF NOT EXISTS daily_closing_balance (
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

INSERT OR REPLACE INTO daily_closing_balance
SELECT k.account_id,
       k.day,
       coalesce((SELECT s.closing_balance
                 FROM daily_closing_balance s
                 WHERE s.account_id = k.account_id AND s.day <= k.day
                 ORDER BY s.day DESC
                 LIMIT 1), 0)
       + (SELECT SUM(f.amount) FROM fresh f WHERE f.account_id = k.account_id AND f.day <= k.day)
FROM (SELECT DISTINCT account_id, day FROM fresh) k;

COMMIT;
