-- Expected account_state: per account the greatest ts_event, then the greatest event_id at that
-- time, found by two aggregates; the account is listed unless that row is a delete.
WITH last_ts AS (
    SELECT account_id, max(ts_event) AS ts_event
    FROM accounts
    GROUP BY account_id
),
last_event AS (
    SELECT a.account_id, max(a.event_id) AS event_id
    FROM accounts a
    JOIN last_ts l ON l.account_id = a.account_id AND l.ts_event = a.ts_event
    GROUP BY a.account_id
)
SELECT a.account_id, a.plan, a.region, a.ts_event AS updated_at
FROM accounts a
JOIN last_event l ON l.event_id = a.event_id
WHERE a.op <> 'delete'
