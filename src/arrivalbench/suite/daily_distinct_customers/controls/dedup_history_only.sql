-- Adds each order of the load unless its event_id is already in history (an order sent two times
-- in one load is added two times), then recomputes the table from history.
CREATE TABLE IF NOT EXISTS order_history (
    event_id    BIGINT,
    store_id    INTEGER,
    day         DATE,
    customer_id INTEGER,
    amount      DECIMAL(12,2)
);

INSERT INTO order_history
SELECT b.event_id, b.store_id, CAST(b.ts_event AS DATE), b.customer_id, b.amount
FROM sales_batch b
WHERE NOT EXISTS (SELECT 1 FROM order_history h WHERE h.event_id = b.event_id);

CREATE OR REPLACE TABLE store_daily_customers AS
SELECT store_id, day, COUNT(DISTINCT customer_id) AS customers, SUM(amount) AS revenue
FROM order_history
GROUP BY store_id, day;
