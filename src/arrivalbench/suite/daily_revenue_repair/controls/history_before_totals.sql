-- The filter removed; stages the orders not stored yet, stores them, then adds the staged orders to
-- running totals; storing and adding are separate statements.
CREATE TABLE IF NOT EXISTS store_orders (
    event_id BIGINT PRIMARY KEY,
    store_id INTEGER,
    day      DATE,
    amount   DECIMAL(12,2)
);

CREATE TABLE IF NOT EXISTS store_daily_revenue (
    store_id INTEGER,
    day      DATE,
    revenue  DECIMAL(18,2),
    orders   BIGINT,
    PRIMARY KEY (store_id, day)
);

CREATE TEMP TABLE staged AS
SELECT DISTINCT ON (event_id) event_id, store_id, CAST(ts_event AS DATE) AS day, amount
FROM sales_batch b
WHERE NOT EXISTS (SELECT 1 FROM store_orders o WHERE o.event_id = b.event_id)
ORDER BY event_id, _arrival_seq;

INSERT INTO store_orders SELECT * FROM staged;

INSERT INTO store_daily_revenue
SELECT store_id, day, SUM(amount), COUNT(*) FROM staged GROUP BY ALL
ON CONFLICT (store_id, day) DO UPDATE
SET revenue = store_daily_revenue.revenue + excluded.revenue,
    orders  = store_daily_revenue.orders + excluded.orders;
