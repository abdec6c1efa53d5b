-- Expected active_accounts_by_plan: rank each account's rows newest first (ts_event, then
-- event_id), keep the first when it is not a delete, count per plan.
WITH ranked AS (
    SELECT account_id, op, plan,
           row_number() OVER (PARTITION BY account_id ORDER BY ts_event DESC, event_id DESC) AS rn
    FROM accounts
)
SELECT plan, count(*) AS active_accounts
FROM ranked
WHERE rn = 1 AND op <> 'delete'
GROUP BY plan
