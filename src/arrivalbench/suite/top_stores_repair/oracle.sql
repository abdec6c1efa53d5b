-- Expected top_stores_daily: per day, the stores sorted into a list by revenue (then store_id),
-- unnested with their positions and cut after the second.
WITH totals AS (
    SELECT CAST(ts_event AS DATE) AS day, store_id, SUM(amount) AS revenue
    FROM sales
    GROUP BY 1, 2
),
ordered AS (
    SELECT day,
           list(store_id ORDER BY revenue DESC, store_id) AS stores,
           list(revenue ORDER BY revenue DESC, store_id)  AS revenues
    FROM totals
    GROUP BY day
)
SELECT o.day, r.i AS rank, o.stores[r.i] AS store_id, o.revenues[r.i] AS revenue
FROM ordered o
CROSS JOIN range(1, 3) AS r(i)
WHERE r.i <= len(o.stores)
