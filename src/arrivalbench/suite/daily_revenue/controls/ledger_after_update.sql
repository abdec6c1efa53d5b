-- Adds each new order to the running totals, then records the order ids it has applied; the two
-- steps are separate statements, so stopping between them applies the batch twice on the rerun.
CREATE TABLE IF NOT EXISTS applied_orders (event_id BIGINT PRIMARY KEY);

CREATE TABLE IF NOT EXISTS daily_revenue (
    store_id INTEGER,
    day      DATE,
    revenue  DECIMAL(18,2),
    orders   BIGINT,
    PRIMARY KEY (store_id, day)
);

INSERT INTO daily_revenue
SELECT store_id, CAST(ts_event AS DATE) AS day, SUM(amount), COUNT(*)
FROM (
    SELECT DISTINCT ON (event_id) *
    FROM sales_batch
    WHERE event_id NOT IN (SELECT event_id FROM applied_orders)
)
GROUP BY ALL
ON CONFLICT (store_id, day) DO UPDATE
SET revenue = daily_revenue.revenue + excluded.revenue,
    orders  = daily_revenue.orders + excluded.orders;

INSERT INTO applied_orders
SELECT DISTINCT event_id FROM sales_batch
ON CONFLICT DO NOTHING;
