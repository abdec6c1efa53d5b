-- Keeps the earliest purchase time with the existing upsert, takes the latest purchase time from
-- the newest load that has the customer, and keeps the (customer, store) pairs as a set.
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
    last_at  = excluded.last_at;

INSERT OR IGNORE INTO customer_stores
SELECT DISTINCT customer_id, store_id FROM sales_batch;

CREATE OR REPLACE TABLE customer_first_purchase AS
SELECT f.customer_id, f.first_at AS first_purchase_at, f.last_at AS last_purchase_at,
       count(*) AS stores_visited
FROM customer_first f
JOIN customer_stores s USING (customer_id)
GROUP BY ALL;
