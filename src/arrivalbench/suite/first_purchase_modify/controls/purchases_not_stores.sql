-- Rule control: the gold, except that stores_visited counts the customer's purchases, not the
-- distinct stores among them.
CREATE TABLE IF NOT EXISTS customer_first (
    customer_id INTEGER PRIMARY KEY,
    first_at    TIMESTAMP,
    last_at     TIMESTAMP
);

CREATE TABLE IF NOT EXISTS customer_stores (
    customer_id INTEGER,
    store_id    INTEGER,
    PRIMARY KEY (customer_id, store_id)
);

INSERT INTO customer_first
SELECT customer_id, min(ts_event), max(ts_event)
FROM sales_batch
GROUP BY customer_id
ON CONFLICT (customer_id) DO UPDATE
SET first_at = least(customer_first.first_at, excluded.first_at),
    last_at  = greatest(customer_first.last_at, excluded.last_at);

CREATE TABLE IF NOT EXISTS customer_purchases (event_id BIGINT PRIMARY KEY, customer_id INTEGER);

INSERT OR IGNORE INTO customer_purchases
SELECT DISTINCT event_id, customer_id FROM sales_batch;

CREATE OR REPLACE TABLE customer_first_purchase AS
SELECT f.customer_id,
       f.first_at AS first_purchase_at,
       f.last_at  AS last_purchase_at,
       (SELECT count(*) FROM customer_purchases s WHERE s.customer_id = f.customer_id) AS stores_visited
FROM customer_first f;
