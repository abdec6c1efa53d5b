-- Expected store_daily_sales: a plain aggregate over the complete log, a missing quantity as 0.
SELECT store_id,
       CAST(ts_event AS DATE)     AS day,
       SUM(amount)                AS revenue,
       COUNT(*)                   AS orders,
       SUM(COALESCE(quantity, 0)) AS units
FROM sales
GROUP BY store_id, CAST(ts_event AS DATE)
