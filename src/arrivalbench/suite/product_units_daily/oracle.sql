-- Expected product_daily_units: both sums per product and order date in one aggregate over the
-- complete log, the date taken with date_trunc.
SELECT product_id,
       CAST(date_trunc('day', ts_event) AS DATE) AS day,
       SUM(quantity)                             AS units,
       SUM(amount)                               AS revenue
FROM sales
GROUP BY product_id, date_trunc('day', ts_event)
