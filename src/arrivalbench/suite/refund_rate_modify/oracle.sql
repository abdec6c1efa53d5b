-- Expected store_refund_summary: per-store sums over the complete log, the rate as a division
-- guarded by NULLIF.
WITH totals AS (
    SELECT store_id,
           SUM(CASE WHEN kind = 'sale' THEN amount ELSE 0 END)   AS gross,
           SUM(CASE WHEN kind = 'refund' THEN amount ELSE 0 END) AS refunds
    FROM orders
    GROUP BY store_id
)
SELECT store_id,
       gross,
       refunds,
       CAST(refunds AS DOUBLE) / NULLIF(CAST(gross AS DOUBLE), 0) AS refund_rate
FROM totals
