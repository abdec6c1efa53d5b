-- Takes the last row received for each customer in a load (the feed is assumed to send changes in
-- order) and overwrites the stored status with it.
CREATE TABLE IF NOT EXISTS customer_status (
    customer_id INTEGER PRIMARY KEY,
    status      VARCHAR,
    updated_at  TIMESTAMP
);

INSERT OR REPLACE INTO customer_status
SELECT customer_id, status, ts_event
FROM customers_batch
QUALIFY row_number() OVER (PARTITION BY customer_id ORDER BY _arrival_seq DESC) = 1;
