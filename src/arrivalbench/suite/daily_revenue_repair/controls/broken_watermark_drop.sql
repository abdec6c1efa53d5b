-- The filter removed, but orders are loaded only at or after the newest order time already loaded
-- (a watermark), so an order whose time is older than that is dropped.
CREATE TABLE IF NOT EXISTS store_orders (
    event_id BIGINT PRIMARY KEY,
    ts_event TIMESTAMP,
    store_id INTEGER,
    amount   DECIMAL(12,2)
);

INSERT INTO store_orders
SELECT event_id, ts_event, store_id, amount
FROM sales_batch
WHERE ts_event >= (SELECT coalesce(max(ts_event), TIMESTAMP '1900-01-01') FROM store_orders)
QUALIFY row_number() OVER (PARTITION BY event_id ORDER BY _arrival_seq) = 1
ON CONFLICT DO NOTHING;

CREATE OR REPLACE TABLE store_daily_revenue AS
SELECT store_id, CAST(ts_event AS DATE) AS day, SUM(amount) AS revenue, COUNT(*) AS orders
FROM store_orders
GROUP BY ALL;
