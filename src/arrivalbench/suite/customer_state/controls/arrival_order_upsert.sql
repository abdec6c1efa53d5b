-- Applies each batch on top of the current state, the last row received for a customer winning.
CREATE TABLE IF NOT EXISTS customer_state (
    customer_id INTEGER PRIMARY KEY,
    status      VARCHAR,
    tier        VARCHAR,
    updated_at  TIMESTAMP
);

INSERT INTO customer_state
SELECT customer_id, status, tier, ts_event
FROM customers_batch
QUALIFY row_number() OVER (PARTITION BY customer_id ORDER BY _arrival_seq DESC) = 1
ON CONFLICT (customer_id) DO UPDATE
SET status = excluded.status, tier = excluded.tier, updated_at = excluded.updated_at;
