-- Expected customer_status: the last status of each customer over a window ordered by
-- (ts_event, event_id), one row per customer.
SELECT DISTINCT
       customer_id,
       last_value(status) OVER w   AS status,
       last_value(ts_event) OVER w AS updated_at
FROM customers
WINDOW w AS (
    PARTITION BY customer_id
    ORDER BY ts_event, event_id
    ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING
)
