-- Expected overdraft_days: the closing balance of each account-day with a movement, as a sum over
-- a join of those days to every earlier-or-same-day movement, kept when negative.
WITH account_days AS (
    SELECT DISTINCT account_id, CAST(ts_event AS DATE) AS day
    FROM ledger
),
closing AS (
    SELECT d.account_id, d.day, SUM(l.amount) AS closing_balance
    FROM account_days d
    JOIN ledger l
      ON l.account_id = d.account_id AND CAST(l.ts_event AS DATE) <= d.day
    GROUP BY d.account_id, d.day
)
SELECT account_id, day, closing_balance
FROM closing
WHERE closing_balance < 0
