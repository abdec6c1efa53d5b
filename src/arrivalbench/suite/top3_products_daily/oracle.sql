-- Expected top3_products_daily: a product's rank is one plus the number of products of the same
-- day that beat it (more revenue, or equal revenue and a smaller product_id); ranks above 3 dropped.
WITH totals AS (
    SELECT CAST(ts_event AS DATE) AS day, product_id, SUM(amount) AS revenue
    FROM sales
    GROUP BY 1, 2
)
SELECT a.day,
       COUNT(b.product_id) + 1 AS rank,
       a.product_id,
       a.revenue
FROM totals a
LEFT JOIN totals b
  ON b.day = a.day
 AND (b.revenue > a.revenue OR (b.revenue = a.revenue AND b.product_id < a.product_id))
GROUP BY a.day, a.product_id, a.revenue
HAVING COUNT(b.product_id) < 3
