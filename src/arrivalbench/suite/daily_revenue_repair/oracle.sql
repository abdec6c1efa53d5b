-- Expected store_daily_revenue: a correlated count and sum for each distinct (store, order date).
WITH store_days AS (
    SELECT DISTINCT store_id, CAST(ts_event AS DATE) AS day FROM sales
)
SELECT d.store_id,
       d.day,
       (SELECT SUM(s.amount) FROM sales s
         WHERE s.store_id = d.store_id AND CAST(s.ts_event AS DATE) = d.day) AS revenue,
       (SELECT COUNT(*) FROM sales s
         WHERE s.store_id = d.store_id AND CAST(s.ts_event AS DATE) = d.day) AS orders
FROM store_days d
