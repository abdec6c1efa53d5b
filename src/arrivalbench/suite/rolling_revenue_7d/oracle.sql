-- Expected rolling_revenue_7d: each (store, order day) joined to every order of that store dated
-- in the seven days ending on it.
WITH order_days AS (
    SELECT DISTINCT store_id, CAST(ts_event AS DATE) AS day
    FROM sales
)
SELECT d.store_id,
       d.day,
       SUM(s.amount)                                          AS revenue_7d,
       COUNT(*) FILTER (WHERE CAST(s.ts_event AS DATE) = d.day) AS orders
FROM order_days d
JOIN sales s
  ON s.store_id = d.store_id
 AND CAST(s.ts_event AS DATE) BETWEEN d.day - 6 AND d.day
GROUP BY d.store_id, d.day
