-- Appends each order unless its event_id is already in the log (an order sent two times in one
-- load is appended two times), then recomputes the whole table with a three-day range window.
CREATE TABLE IF NOT EXISTS order_log (
    event_id BIGINT,
    ts_event TIMESTAMP,
    store_id INTEGER
);

INSERT INTO order_log
SELECT b.event_id, b.ts_event, b.store_id
FROM sales_batch b
WHERE b.event_id NOT IN (SELECT event_id FROM order_log);

CREATE OR REPLACE TABLE store_daily_orders AS
WITH daily AS (
    SELECT store_id, CAST(ts_event AS DATE) AS day, COUNT(*) AS orders
    FROM order_log
    GROUP BY ALL
)
SELECT store_id, day, orders,
       SUM(orders) OVER (
           PARTITION BY store_id ORDER BY day
           RANGE BETWEEN INTERVAL 2 DAYS PRECEDING AND CURRENT ROW
       ) AS orders_3d
FROM daily;
