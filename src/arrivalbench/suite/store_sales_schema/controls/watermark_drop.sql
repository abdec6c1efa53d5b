-- Loads only orders at or after the newest order time already loaded, so an order older than that
-- is dropped; missing columns of a batch are filled with NULL.
CREATE TABLE IF NOT EXISTS sales_history (
    event_id BIGINT PRIMARY KEY,
    ts_event TIMESTAMP,
    store_id INTEGER,
    amount   DECIMAL(12,2),
    quantity INTEGER
);

INSERT INTO sales_history BY NAME
SELECT * EXCLUDE (_arrival_seq, _batch_id)
FROM sales_batch
WHERE ts_event >= (SELECT coalesce(max(ts_event), TIMESTAMP '1900-01-01') FROM sales_history)
QUALIFY row_number() OVER (PARTITION BY event_id ORDER BY _arrival_seq) = 1
ON CONFLICT DO NOTHING;

CREATE OR REPLACE TABLE store_daily_sales AS
SELECT store_id, CAST(ts_event AS DATE) AS day,
       CAST(SUM(amount) AS DECIMAL(18,2)) AS revenue,
       COUNT(*) AS orders,
       CAST(SUM(coalesce(quantity, 0)) AS BIGINT) AS units
FROM sales_history
GROUP BY ALL;
