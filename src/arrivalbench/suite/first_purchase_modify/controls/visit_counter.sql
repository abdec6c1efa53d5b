-- Keeps a running count of stores per customer: the (customer, store) pairs not yet known are
-- staged, counted into the running count, and only then added to the known pairs, in separate
-- statements; the earliest and latest purchase times are kept with keep-the-extreme upserts.
CREATE TABLE IF NOT EXISTS customer_first (
    customer_id    INTEGER PRIMARY KEY,
    first_at       TIMESTAMP,
    last_at        TIMESTAMP,
    stores_visited BIGINT
);

CREATE TABLE IF NOT EXISTS customer_stores (
    customer_id INTEGER,
    store_id    INTEGER,
    PRIMARY KEY (customer_id, store_id)
);

CREATE TEMP TABLE new_pairs AS
SELECT DISTINCT b.customer_id, b.store_id
FROM sales_batch b
WHERE NOT EXISTS (
    SELECT 1 FROM customer_stores s WHERE s.customer_id = b.customer_id AND s.store_id = b.store_id
);

INSERT INTO customer_first (customer_id, stores_visited)
SELECT customer_id, count(*) FROM new_pairs GROUP BY customer_id
ON CONFLICT (customer_id) DO UPDATE
SET stores_visited = customer_first.stores_visited + excluded.stores_visited;

INSERT INTO customer_stores SELECT customer_id, store_id FROM new_pairs;

INSERT INTO customer_first (customer_id, first_at, last_at)
SELECT customer_id, min(ts_event), max(ts_event)
FROM sales_batch
GROUP BY customer_id
ON CONFLICT (customer_id) DO UPDATE
SET first_at = least(customer_first.first_at, excluded.first_at),
    last_at  = greatest(customer_first.last_at, excluded.last_at);

CREATE OR REPLACE TABLE customer_first_purchase AS
SELECT customer_id, first_at AS first_purchase_at, last_at AS last_purchase_at, stores_visited
FROM customer_first;
