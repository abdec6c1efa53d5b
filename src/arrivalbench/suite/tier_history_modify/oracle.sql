-- Expected tier_history: each change with the ts_event of the change that directly follows it
-- (looked up one by one, ordered by ts_event then event_id).
SELECT c.customer_id,
       c.event_id,
       c.tier,
       c.ts_event AS valid_from,
       (SELECT n.ts_event
        FROM customers n
        WHERE n.customer_id = c.customer_id
          AND (n.ts_event, n.event_id) > (c.ts_event, c.event_id)
        ORDER BY n.ts_event, n.event_id
        LIMIT 1) AS valid_to,
       NOT EXISTS (
           SELECT 1 FROM customers n
           WHERE n.customer_id = c.customer_id
             AND (n.ts_event, n.event_id) > (c.ts_event, c.event_id)
       ) AS is_current
FROM customers c
