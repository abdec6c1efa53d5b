-- Expected customer_state: per customer, the last change by (ts_event, event_id) via arg_max,
-- with the number of distinct change ids.
SELECT customer_id,
       arg_max(status, (ts_event, event_id))   AS status,
       arg_max(tier, (ts_event, event_id))     AS tier,
       max(ts_event)                           AS updated_at,
       count(DISTINCT event_id)                AS changes
FROM customers
GROUP BY customer_id
