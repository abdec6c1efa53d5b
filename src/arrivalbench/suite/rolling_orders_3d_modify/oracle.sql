-- Expected store_daily_orders: daily counts laid on a gap-free calendar per store (days without
-- orders count 0), a three-row trailing sum over it, and only the days with orders kept.
WITH daily AS (
    SELECT store_id, CAST(ts_event AS DATE) AS day, COUNT(*) AS orders
    FROM sales
    GROUP BY 1, 2
),
bounds AS (
    SELECT store_id, min(day) AS first_day, max(day) AS last_day
    FROM daily
    GROUP BY store_id
),
calendar AS (
    SELECT b.store_id, CAST(g.d AS DATE) AS day
    FROM bounds b,
         generate_series(CAST(b.first_day AS TIMESTAMP), CAST(b.last_day AS TIMESTAMP), INTERVAL 1 DAY) AS g(d)
),
filled AS (
    SELECT c.store_id, c.day, d.orders, coalesce(d.orders, 0) AS n
    FROM calendar c
    LEFT JOIN daily d ON d.store_id = c.store_id AND d.day = c.day
)
SELECT store_id, day, orders, orders_3d
FROM (
    SELECT store_id, day, orders,
           SUM(n) OVER (PARTITION BY store_id ORDER BY day ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) AS orders_3d
    FROM filled
)
WHERE orders IS NOT NULL
