-- Keeps the set of (store, day, customer) visits and a running revenue per store-day: revenue of
-- the orders not yet recorded is added first, and their ids are recorded in a later statement.
CREATE TABLE IF NOT EXISTS visits (
    store_id    INTEGER,
    day         DATE,
    customer_id INTEGER,
    PRIMARY KEY (store_id, day, customer_id)
);

CREATE TABLE IF NOT EXISTS day_revenue (
    store_id INTEGER,
    day      DATE,
    revenue  DECIMAL(18,2),
    PRIMARY KEY (store_id, day)
);

CREATE TABLE IF NOT EXISTS counted_orders (event_id BIGINT PRIMARY KEY);

INSERT INTO day_revenue
SELECT store_id, CAST(ts_event AS DATE), SUM(amount)
FROM (
    SELECT DISTINCT ON (event_id) *
    FROM sales_batch
    WHERE event_id NOT IN (SELECT event_id FROM counted_orders)
    ORDER BY event_id, _arrival_seq
)
GROUP BY ALL
ON CONFLICT (store_id, day) DO UPDATE SET revenue = day_revenue.revenue + excluded.revenue;

INSERT OR IGNORE INTO counted_orders SELECT DISTINCT event_id FROM sales_batch;

INSERT OR IGNORE INTO visits
SELECT DISTINCT store_id, CAST(ts_event AS DATE), customer_id FROM sales_batch;

CREATE OR REPLACE TABLE store_daily_customers AS
SELECT v.store_id, v.day, COUNT(*) AS customers, r.revenue
FROM visits v
JOIN day_revenue r ON r.store_id = v.store_id AND r.day = v.day
GROUP BY v.store_id, v.day, r.revenue;
