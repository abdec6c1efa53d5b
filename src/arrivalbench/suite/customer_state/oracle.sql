-- Expected customer_state: for each customer, the event that no other event of that customer
-- follows (by ts_event, then event_id).
SELECT c.customer_id, c.status, c.tier, c.ts_event AS updated_at
FROM customers c
WHERE NOT EXISTS (
    SELECT 1
    FROM customers n
    WHERE n.customer_id = c.customer_id
      AND (n.ts_event > c.ts_event OR (n.ts_event = c.ts_event AND n.event_id > c.event_id))
)
