-- Treats every day before the newest day already stored as closed: orders dated on an earlier day
-- are not loaded; otherwise keeps each order once and recomputes the table from the stored orders.
CREATE TABLE IF NOT EXISTS order_history (
    event_id    BIGINT PRIMARY KEY,
    store_id    INTEGER,
    day         DATE,
    customer_id INTEGER,
    amount      DECIMAL(12,2)
);

INSERT INTO order_history
SELECT event_id, store_id, CAST(ts_event AS DATE), customer_id, amount
FROM sales_batch
WHERE CAST(ts_event AS DATE) >= (SELECT coalesce(max(day), DATE '1900-01-01') FROM order_history)
QUALIFY row_number() OVER (PARTITION BY event_id ORDER BY _arrival_seq) = 1
ON CONFLICT DO NOTHING;

CREATE OR REPLACE TABLE store_daily_customers AS
SELECT store_id, day, COUNT(DISTINCT customer_id) AS customers, SUM(amount) AS revenue
FROM order_history
GROUP BY store_id, day;
