-- Records the batch as processed first, so a rerun of the same batch can be skipped; the record
-- and the changes are separate statements.
CREATE TABLE IF NOT EXISTS processed_batches (batch_id BIGINT PRIMARY KEY);

CREATE TABLE IF NOT EXISTS customer_changes (
    event_id    BIGINT PRIMARY KEY,
    ts_event    TIMESTAMP,
    customer_id INTEGER,
    status      VARCHAR,
    tier        VARCHAR
);

CREATE TEMP TABLE this_batch AS
SELECT * FROM customers_batch
WHERE _batch_id NOT IN (SELECT batch_id FROM processed_batches);

INSERT INTO processed_batches
SELECT DISTINCT _batch_id FROM customers_batch
ON CONFLICT DO NOTHING;

INSERT OR IGNORE INTO customer_changes
SELECT DISTINCT ON (event_id) event_id, ts_event, customer_id, status, tier
FROM this_batch
ORDER BY event_id, _arrival_seq;

CREATE OR REPLACE TABLE customer_state AS
SELECT customer_id, status, tier, ts_event AS updated_at
FROM customer_changes
QUALIFY row_number() OVER (PARTITION BY customer_id ORDER BY ts_event DESC, event_id DESC) = 1;
