-- Keeps the closing balances themselves: records the load's new movements as applied first, then
-- opens the account-days they bring (carrying in the balance of the account's latest stored day
-- before) and adds each movement to its own day and every later stored day, in separate
-- statements with no transaction.
CREATE TABLE IF NOT EXISTS applied_movements (event_id BIGINT PRIMARY KEY);

CREATE TABLE IF NOT EXISTS daily_closing_balance (
    account_id      INTEGER,
    day             DATE,
    closing_balance DECIMAL(18,2),
    PRIMARY KEY (account_id, day)
);

CREATE TEMP TABLE fresh AS
SELECT DISTINCT ON (event_id) event_id, account_id, CAST(ts_event AS DATE) AS day, amount
FROM ledger_batch
WHERE event_id NOT IN (SELECT event_id FROM applied_movements)
ORDER BY event_id, _arrival_seq;

INSERT INTO applied_movements SELECT event_id FROM fresh;

INSERT INTO daily_closing_balance
SELECT k.account_id,
       k.day,
       coalesce((SELECT s.closing_balance
                 FROM daily_closing_balance s
                 WHERE s.account_id = k.account_id AND s.day < k.day
                 ORDER BY s.day DESC
                 LIMIT 1), 0)
FROM (SELECT DISTINCT account_id, day FROM fresh) k
WHERE NOT EXISTS (
    SELECT 1 FROM daily_closing_balance d WHERE d.account_id = k.account_id AND d.day = k.day);

UPDATE daily_closing_balance AS d
SET closing_balance = d.closing_balance + m.added
FROM (
    SELECT d2.account_id, d2.day, SUM(f.amount) AS added
    FROM daily_closing_balance d2
    JOIN fresh f ON f.account_id = d2.account_id AND f.day <= d2.day
    GROUP BY d2.account_id, d2.day
) AS m
WHERE d.account_id = m.account_id AND d.day = m.day;
