-- Pads the batch to the full column set, stages each order unless its event_id is already in
-- history (an order sent two times within one batch is stored two times), then recomputes.
CREATE TABLE IF NOT EXISTS sales_history (
    event_id BIGINT,
    ts_event TIMESTAMP,
    store_id INTEGER,
    amount   DECIMAL(12,2),
    quantity INTEGER
);

CREATE TEMP TABLE padded AS
SELECT event_id, ts_event, store_id, amount, quantity
FROM (
    SELECT NULL::INTEGER AS quantity WHERE false
    UNION ALL BY NAME
    SELECT * FROM sales_batch
) AS padded_batch;

INSERT INTO sales_history
SELECT * FROM padded p
WHERE NOT EXISTS (SELECT 1 FROM sales_history h WHERE h.event_id = p.event_id);

CREATE OR REPLACE TABLE store_daily_sales AS
SELECT store_id, CAST(ts_event AS DATE) AS day,
       SUM(amount) AS revenue, COUNT(*) AS orders, coalesce(SUM(quantity), 0) AS units
FROM sales_history
GROUP BY ALL;
