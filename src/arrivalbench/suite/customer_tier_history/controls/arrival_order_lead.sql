-- Keeps every change once with the position it was received at, and closes each change with the
-- next change of the customer in order of receipt.
CREATE TABLE IF NOT EXISTS tier_changes (
    event_id    BIGINT PRIMARY KEY,
    arrival_seq BIGINT,
    ts_event    TIMESTAMP,
    customer_id INTEGER,
    tier        VARCHAR
);

INSERT OR IGNORE INTO tier_changes
SELECT DISTINCT ON (event_id) event_id, _arrival_seq, ts_event, customer_id, tier
FROM customers_batch
ORDER BY event_id, _arrival_seq;

CREATE OR REPLACE TABLE customer_tier_history AS
SELECT event_id, customer_id, tier, ts_event AS valid_from,
       lead(ts_event) OVER (PARTITION BY customer_id ORDER BY arrival_seq) AS valid_to
FROM tier_changes;
