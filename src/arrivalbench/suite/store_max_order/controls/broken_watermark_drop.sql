-- Loads only orders at or after the newest order time already loaded (a watermark), so an order
-- whose time is older than that is dropped; the extremes are derived from the loaded orders.
CREATE TABLE IF NOT EXISTS store_orders (
    event_id BIGINT PRIMARY KEY,
    ts_event TIMESTAMP,
    store_id INTEGER,
    amount   DECIMAL(12,2)
);

INSERT OR IGNORE INTO store_orders
SELECT DISTINCT event_id, ts_event, store_id, amount
FROM sales_batch
WHERE ts_event >= (SELECT coalesce(max(ts_event), TIMESTAMP '1900-01-01') FROM store_orders);

CREATE OR REPLACE TABLE store_order_extremes AS
SELECT store_id,
       max(amount)                               AS largest_amount,
       min(amount)                               AS smallest_amount,
       arg_max(ts_event, (amount, -event_id))    AS largest_at
FROM store_orders
GROUP BY store_id;
