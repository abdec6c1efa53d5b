-- Expected tier_revenue: each sale looks up the customer's tier as of the sale, over the complete logs.
WITH attributed AS (
    SELECT s.ts_event,
           s.amount,
           (SELECT c.tier
            FROM customers c
            WHERE c.customer_id = s.customer_id AND c.ts_event <= s.ts_event
            ORDER BY c.ts_event DESC, c.event_id DESC
            LIMIT 1) AS tier
    FROM sales s
)
SELECT coalesce(tier, 'unknown') AS tier,
       CAST(ts_event AS DATE)    AS day,
       SUM(amount)               AS revenue,
       COUNT(*)                  AS orders
FROM attributed
GROUP BY ALL
