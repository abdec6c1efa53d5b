-- Keeps each order once in a history with every column, selecting the columns by name: a load
-- whose rows have no `quantity` column stops the pipeline with a binder error.
CREATE TABLE IF NOT EXISTS sales_history (
    event_id BIGINT PRIMARY KEY,
    ts_event TIMESTAMP,
    store_id INTEGER,
    amount   DECIMAL(12,2),
    quantity INTEGER
);

INSERT OR IGNORE INTO sales_history
SELECT DISTINCT ON (event_id) event_id, ts_event, store_id, amount, quantity
FROM sales_batch
ORDER BY event_id, _arrival_seq;

CREATE OR REPLACE TABLE store_daily_sales AS
SELECT store_id, CAST(ts_event AS DATE) AS day,
       CAST(SUM(amount) AS DECIMAL(18,2)) AS revenue,
       COUNT(*) AS orders,
       CAST(coalesce(SUM(quantity), 0) AS BIGINT) AS units
FROM sales_history
GROUP BY ALL;
