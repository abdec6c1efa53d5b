-- Stages each order unless its event_id is already in history: an order sent twice in one batch
-- is inserted twice.
CREATE TABLE IF NOT EXISTS sales_history (
    event_id BIGINT,
    ts_event TIMESTAMP,
    store_id INTEGER,
    amount   DECIMAL(12,2)
);

INSERT INTO sales_history
SELECT b.event_id, b.ts_event, b.store_id, b.amount
FROM sales_batch b
WHERE NOT EXISTS (SELECT 1 FROM sales_history h WHERE h.event_id = b.event_id);

CREATE OR REPLACE TABLE daily_revenue AS
SELECT store_id,
       CAST(ts_event AS DATE)          AS day,
       CAST(SUM(amount) AS DECIMAL(18,2)) AS revenue,
       COUNT(*)                        AS orders
FROM sales_history
GROUP BY ALL;
