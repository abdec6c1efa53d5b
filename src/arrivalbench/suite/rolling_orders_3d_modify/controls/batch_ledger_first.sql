-- Records the load's batch id as done, then appends the rows of loads not yet done to the log and
-- recomputes the table; the record and the append are separate statements.
CREATE TABLE IF NOT EXISTS loaded_batches (batch_id BIGINT PRIMARY KEY);

CREATE TABLE IF NOT EXISTS order_log (
    event_id BIGINT PRIMARY KEY,
    ts_event TIMESTAMP,
    store_id INTEGER
);

CREATE TEMP TABLE pending AS
SELECT * FROM sales_batch
WHERE _batch_id NOT IN (SELECT batch_id FROM loaded_batches);

INSERT INTO loaded_batches SELECT DISTINCT _batch_id FROM pending;

INSERT OR IGNORE INTO order_log
SELECT DISTINCT ON (event_id) event_id, ts_event, store_id
FROM pending
ORDER BY event_id, _arrival_seq;

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
