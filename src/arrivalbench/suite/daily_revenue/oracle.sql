-- Expected daily_revenue: a plain aggregate over the complete log of sales.
SELECT store_id,
       CAST(ts_event AS DATE) AS day,
       SUM(amount)            AS revenue,
       COUNT(*)               AS orders
FROM sales
GROUP BY store_id, CAST(ts_event AS DATE)
