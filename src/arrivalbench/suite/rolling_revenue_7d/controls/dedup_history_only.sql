-- Adds each order unless its event_id is already in history (an order sent two times within one
-- batch is added two times), then recomputes the whole table.
CREATE TABLE IF NOT EXISTS sales_history (
    event_id BIGINT,
    ts_event TIMESTAMP,
    store_id INTEGER,
    amount   DECIMAL(12,2)
);

INSERT INTO sales_history
SELECT b.event_id, b.ts_event, b.store_id, b.amount
FROM sales_batch b
WHERE b.event_id NOT IN (SELECT event_id FROM sales_history);

CREATE OR REPLACE TABLE rolling_revenue_7d AS
WITH daily AS (
    SELECT store_id, CAST(ts_event AS DATE) AS day, SUM(amount) AS revenue, COUNT(*) AS orders
    FROM sales_history
    GROUP BY ALL
)
SELECT store_id, day,
       CAST(SUM(revenue) OVER (
           PARTITION BY store_id ORDER BY day
           RANGE BETWEEN INTERVAL 6 DAYS PRECEDING AND CURRENT ROW
       ) AS DECIMAL(18,2)) AS revenue_7d,
       orders
FROM daily;
