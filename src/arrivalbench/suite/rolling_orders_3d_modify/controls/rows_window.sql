-- Rule control: the gold, except that the three-day count sums the store's last three order days
-- (ROWS), not the three calendar days ending on day.
CREATE TABLE IF NOT EXISTS order_log (
    event_id BIGINT PRIMARY KEY,
    ts_event TIMESTAMP,
    store_id INTEGER
);

CREATE TABLE IF NOT EXISTS store_daily_orders (
    store_id  INTEGER,
    day       DATE,
    orders    BIGINT,
    orders_3d BIGINT,
    PRIMARY KEY (store_id, day)
);

BEGIN TRANSACTION;

INSERT OR IGNORE INTO order_log
SELECT DISTINCT ON (event_id) event_id, ts_event, store_id
FROM sales_batch
ORDER BY event_id, _arrival_seq;

CREATE TEMP TABLE touched AS
SELECT DISTINCT b.store_id, CAST(b.ts_event AS DATE) + CAST(k.i AS INTEGER) AS day
FROM sales_batch b
CROSS JOIN range(0, 3) AS k(i);

DELETE FROM store_daily_orders t
USING touched u
WHERE t.store_id = u.store_id AND t.day = u.day;

INSERT INTO store_daily_orders
WITH daily AS (
    SELECT store_id, CAST(ts_event AS DATE) AS day, COUNT(*) AS orders
    FROM order_log
    WHERE store_id IN (SELECT store_id FROM touched)
    GROUP BY ALL
)
SELECT d.store_id, d.day, d.orders, d.orders_3d
FROM (
    SELECT store_id, day, orders,
           SUM(orders) OVER (PARTITION BY store_id ORDER BY day
                             ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) AS orders_3d
    FROM daily
) d
JOIN touched u ON u.store_id = d.store_id AND u.day = d.day;

COMMIT;
