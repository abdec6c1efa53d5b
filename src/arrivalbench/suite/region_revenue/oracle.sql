-- Expected region_revenue: each customer's current region by arg_max_null over (ts_event,
-- event_id), so the latest row's region counts even when it is NULL; every order attributed to it
-- ('unknown' only for a customer without any row), summed per region.
WITH current_region AS (
    SELECT customer_id, arg_max_null(region, (ts_event, event_id)) AS region
    FROM customers
    GROUP BY customer_id
)
SELECT CASE WHEN r.customer_id IS NULL THEN 'unknown' ELSE r.region END AS region,
       SUM(s.amount)                 AS revenue,
       COUNT(*)                      AS orders
FROM sales s
LEFT JOIN current_region r ON r.customer_id = s.customer_id
GROUP BY 1
