-- Keeps every order once and takes a customer's region from the last region row received for
-- them, assuming the region feed sends its rows in order.
CREATE TABLE IF NOT EXISTS orders_seen (
    event_id    BIGINT PRIMARY KEY,
    customer_id INTEGER,
    amount      DECIMAL(12,2)
);

CREATE TABLE IF NOT EXISTS customer_region (
    customer_id INTEGER PRIMARY KEY,
    region      VARCHAR
);

INSERT OR IGNORE INTO orders_seen
SELECT DISTINCT ON (event_id) event_id, customer_id, amount
FROM sales_batch
ORDER BY event_id, _arrival_seq;

INSERT OR REPLACE INTO customer_region
SELECT customer_id, region
FROM customers_batch
QUALIFY row_number() OVER (PARTITION BY customer_id ORDER BY _arrival_seq DESC) = 1;

CREATE OR REPLACE TABLE region_revenue AS
SELECT coalesce(c.region, 'unknown') AS region,
       CAST(SUM(o.amount) AS DECIMAL(18,2)) AS revenue,
       COUNT(*) AS orders
FROM orders_seen o
LEFT JOIN customer_region c USING (customer_id)
GROUP BY ALL;
