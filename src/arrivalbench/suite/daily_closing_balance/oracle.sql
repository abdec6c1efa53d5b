-- Expected daily_closing_balance: for each account-day with a movement, a correlated sum of every
-- movement of that account dated on or before the day.
WITH account_days AS (
    SELECT DISTINCT account_id, CAST(ts_event AS DATE) AS day
    FROM ledger
)
SELECT d.account_id,
       d.day,
       (SELECT SUM(l.amount)
        FROM ledger l
        WHERE l.account_id = d.account_id
          AND CAST(l.ts_event AS DATE) <= d.day) AS closing_balance
FROM account_days d
