-- Adds each new order to running totals, then records the order ids it has applied; the two steps
-- are separate statements, so stopping between them applies the batch again on the next run.
CREATE TABLE IF NOT EXISTS applied_orders (event_id BIGINT PRIMARY KEY);

CREATE TABLE IF NOT EXISTS store_daily_sales (
    store_id INTEGER,
    day      DATE,
    revenue  DECIMAL(18,2),
    orders   BIGINT,
    units    BIGINT,
    PRIMARY KEY (store_id, day)
);

CREATE TEMP TABLE new_orders AS
SELECT DISTINCT ON (event_id) event_id, ts_event, store_id, amount, quantity
FROM (
    SELECT NULL::INTEGER AS quantity WHERE false
    UNION ALL BY NAME
    SELECT * FROM sales_batch
) AS padded_batch
WHERE event_id NOT IN (SELECT event_id FROM applied_orders)
ORDER BY event_id;

INSERT INTO store_daily_sales
SELECT store_id, CAST(ts_event AS DATE), SUM(amount), COUNT(*), coalesce(SUM(quantity), 0)
FROM new_orders
GROUP BY ALL
ON CONFLICT (store_id, day) DO UPDATE
SET revenue = store_daily_sales.revenue + excluded.revenue,
    orders  = store_daily_sales.orders + excluded.orders,
    units   = store_daily_sales.units + excluded.units;

INSERT INTO applied_orders SELECT event_id FROM new_orders;
