-- Loads only orders at or after the newest order time already loaded (a watermark), so an order
-- whose time is older than that is dropped; otherwise keeps each order once and ranks by revenue.
CREATE TABLE IF NOT EXISTS store_orders (
    event_id BIGINT PRIMARY KEY,
    ts_event TIMESTAMP,
    store_id INTEGER,
    amount   DECIMAL(12,2)
);

INSERT OR IGNORE INTO store_orders
SELECT DISTINCT ON (event_id) event_id, ts_event, store_id, amount
FROM sales_batch
WHERE ts_event >= (SELECT coalesce(max(ts_event), TIMESTAMP '1900-01-01') FROM store_orders)
ORDER BY event_id, _arrival_seq;

CREATE OR REPLACE TABLE top_stores_daily AS
SELECT CAST(ts_event AS DATE) AS day,
       row_number() OVER (PARTITION BY CAST(ts_event AS DATE) ORDER BY SUM(amount) DESC, store_id) AS rank,
       store_id,
       SUM(amount) AS revenue
FROM store_orders
GROUP BY CAST(ts_event AS DATE), store_id
QUALIFY rank <= 2;
