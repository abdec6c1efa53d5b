-- customer_first_purchase: when each customer first bought something. The earliest purchase time
-- per customer is kept in customer_first and replaced only by an earlier one.
CREATE TABLE IF NOT EXISTS customer_first (
    customer_id INTEGER PRIMARY KEY,
    first_at    TIMESTAMP
);

INSERT INTO customer_first
SELECT customer_id, min(ts_event)
FROM sales_batch
GROUP BY customer_id
ON CONFLICT (customer_id) DO UPDATE
SET first_at = least(customer_first.first_at, excluded.first_at);

CREATE OR REPLACE TABLE customer_first_purchase AS
SELECT customer_id, first_at AS first_purchase_at
FROM customer_first;
