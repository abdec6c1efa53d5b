-- Expected customer_tier_history: every change, closed by the earliest ts_event among the changes
-- of the same customer that follow it in (ts_event, event_id) order; NULL when none follows.
SELECT c.event_id,
       c.customer_id,
       c.tier,
       c.ts_event       AS valid_from,
       min(n.ts_event)  AS valid_to
FROM customers c
LEFT JOIN customers n
  ON n.customer_id = c.customer_id
 AND (n.ts_event > c.ts_event OR (n.ts_event = c.ts_event AND n.event_id > c.event_id))
GROUP BY c.event_id, c.customer_id, c.tier, c.ts_event
