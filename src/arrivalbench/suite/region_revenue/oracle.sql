-- Expected region_revenue: each customer's current region by arg_max over (ts_event, event_id),
-- every order attributed to it ('unknown' without one), summed per region.
WITH current_region AS (
    SELECT customer_id, arg_max(region, (ts_event, event_id)) AS region
    FROM customers
    GROUP BY customer_id
)
SELECT coalesce(r.region, 'unknown') AS region,
       SUM(s.amount)                 AS revenue,
       COUNT(*)                      AS orders
FROM sales s
LEFT JOIN current_region r ON r.customer_id = s.customer_id
GROUP BY coalesce(r.region, 'unknown')
