-- Stores an order unless its event_id is already stored; an order sent more than once inside one
-- load is stored as many times as it appears. Regions are kept correctly.
CREATE TABLE IF NOT EXISTS orders_seen (
    event_id    BIGINT,
    customer_id INTEGER,
    amount      DECIMAL(12,2)
);

CREATE TABLE IF NOT EXISTS region_changes (
    event_id    BIGINT PRIMARY KEY,
    ts_event    TIMESTAMP,
    customer_id INTEGER,
    region      VARCHAR
);

INSERT INTO orders_seen
SELECT event_id, customer_id, amount
FROM sales_batch b
WHERE NOT EXISTS (SELECT 1 FROM orders_seen o WHERE o.event_id = b.event_id);

INSERT OR IGNORE INTO region_changes
SELECT DISTINCT ON (event_id) event_id, ts_event, customer_id, region
FROM customers_batch
ORDER BY event_id, _arrival_seq;

CREATE OR REPLACE TABLE region_revenue AS
WITH current_region AS (
    SELECT customer_id, region
    FROM region_changes
    QUALIFY row_number() OVER (PARTITION BY customer_id ORDER BY ts_event DESC, event_id DESC) = 1
)
SELECT coalesce(c.region, 'unknown') AS region,
       CAST(SUM(o.amount) AS DECIMAL(18,2)) AS revenue,
       COUNT(*) AS orders
FROM orders_seen o
LEFT JOIN current_region c USING (customer_id)
GROUP BY ALL;
