-- Expected account_state: each account's row that no other row of the account follows (by
-- ts_event, then event_id), unless that row is a delete.
SELECT a.account_id, a.plan, a.region, a.ts_event AS updated_at
FROM accounts a
WHERE a.op <> 'delete'
  AND NOT EXISTS (
      SELECT 1
      FROM accounts b
      WHERE b.account_id = a.account_id
        AND (b.ts_event > a.ts_event OR (b.ts_event = a.ts_event AND b.event_id > a.event_id))
  )
