-- Keeps, per product, only orders at or after the newest order time already stored for that
-- product, so an order older than that is dropped; otherwise keeps each order once and recomputes.
CREATE TABLE IF NOT EXISTS sales_log (
    event_id   BIGINT PRIMARY KEY,
    ts_event   TIMESTAMP,
    product_id INTEGER,
    quantity   INTEGER,
    amount     DECIMAL(12,2)
);

INSERT INTO sales_log
SELECT b.event_id, b.ts_event, b.product_id, b.quantity, b.amount
FROM sales_batch b
LEFT JOIN (SELECT product_id, max(ts_event) AS newest FROM sales_log GROUP BY product_id) w
  ON w.product_id = b.product_id
WHERE w.newest IS NULL OR b.ts_event >= w.newest
ON CONFLICT DO NOTHING;

CREATE OR REPLACE TABLE product_daily_units AS
SELECT product_id, CAST(ts_event AS DATE) AS day, SUM(quantity) AS units, SUM(amount) AS revenue
FROM sales_log
GROUP BY ALL;
