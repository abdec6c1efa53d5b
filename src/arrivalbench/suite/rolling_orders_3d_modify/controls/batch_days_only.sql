-- The existing rebuild with the three-day count added: only the store-days the load carries are
-- deleted and recomputed (their windows from the full log), as if rows of other days were final.
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
SELECT DISTINCT store_id, CAST(ts_event AS DATE) AS day FROM sales_batch;

DELETE FROM store_daily_orders t
USING touched u
WHERE t.store_id = u.store_id AND t.day = u.day;

INSERT INTO store_daily_orders
SELECT u.store_id, u.day,
       COUNT(*) FILTER (WHERE CAST(l.ts_event AS DATE) = u.day),
       COUNT(*)
FROM touched u
JOIN order_log l
  ON l.store_id = u.store_id
 AND CAST(l.ts_event AS DATE) BETWEEN u.day - 2 AND u.day
GROUP BY u.store_id, u.day;

COMMIT;
