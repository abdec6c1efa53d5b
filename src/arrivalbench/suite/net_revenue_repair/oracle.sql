-- Expected store_daily_net: every row signed by its kind (sales up, refunds down) and summed per
-- store and day over the complete log.
SELECT store_id,
       day,
       SUM(signed) AS net_revenue
FROM (
    SELECT store_id,
           CAST(ts_event AS DATE) AS day,
           CASE kind WHEN 'sale' THEN amount WHEN 'refund' THEN -amount END AS signed
    FROM orders
) t
GROUP BY store_id, day
