-- Expected net_revenue: sales and refunds summed separately per store and day, then joined.
WITH sales AS (
    SELECT store_id, CAST(ts_event AS DATE) AS day, SUM(amount) AS gross
    FROM orders
    WHERE kind = 'sale'
    GROUP BY store_id, CAST(ts_event AS DATE)
),
refunds AS (
    SELECT store_id, CAST(ts_event AS DATE) AS day, SUM(amount) AS refunds
    FROM orders
    WHERE kind = 'refund'
    GROUP BY store_id, CAST(ts_event AS DATE)
)
SELECT coalesce(s.store_id, r.store_id)                     AS store_id,
       coalesce(s.day, r.day)                               AS day,
       coalesce(s.gross, 0)                                 AS gross,
       coalesce(r.refunds, 0)                               AS refunds,
       coalesce(s.gross, 0) - coalesce(r.refunds, 0)        AS net
FROM sales s
FULL OUTER JOIN refunds r ON s.store_id = r.store_id AND s.day = r.day
