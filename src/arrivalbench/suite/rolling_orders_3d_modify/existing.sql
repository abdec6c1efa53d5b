-- store_daily_orders: orders per store and day. Every order is kept once in order_log; in one
-- transaction the rows of the store-days a load touches are deleted and recounted from the log.
CREATE TABLE IF NOT EXISTS order_log (
    event_id BIGINT PRIMARY KEY,
    ts_event TIMESTAMP,
    store_id INTEGER
);

CREATE TABLE IF NOT EXISTS store_daily_orders (
    store_id INTEGER,
    day      DATE,
    orders   BIGINT,
    PRIMARY KEY (store_id, day)
);

BEGIN TRANSACTION;

INSERT OR IGNORE INTO order_log
SELECT DISTINCT ON (event_id) event_id, ts_event, store_id
FROM sales_batch
ORDER BY event_id, _arrival_seq;

CREATE TEMP TABLE touched AS
SELECT DISTINCT store_id, CAST(ts_event AS DATE) AS day FROM sales_batch;

DELETE FROM store_daily_orders t
USING touched u
WHERE t.store_id = u.store_id AND t.day = u.day;

INSERT INTO store_daily_orders
SELECT l.store_id, CAST(l.ts_event AS DATE) AS day, COUNT(*)
FROM order_log l
JOIN touched u ON u.store_id = l.store_id AND u.day = CAST(l.ts_event AS DATE)
GROUP BY ALL;

COMMIT;
