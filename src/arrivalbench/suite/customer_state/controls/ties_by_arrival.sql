-- Rule control: the gold, except that of two changes with the same ts_event the one received
-- later wins (the text says the larger event_id does).
CREATE TABLE IF NOT EXISTS customer_changes (
    event_id    BIGINT PRIMARY KEY,
    ts_event    TIMESTAMP,
    customer_id INTEGER,
    status      VARCHAR,
    tier        VARCHAR,
    arrival     BIGINT
);

INSERT OR IGNORE INTO customer_changes
SELECT DISTINCT ON (event_id) event_id, ts_event, customer_id, status, tier, _arrival_seq
FROM customers_batch
ORDER BY event_id, _arrival_seq;

CREATE OR REPLACE TABLE customer_state AS
SELECT customer_id, status, tier, ts_event AS updated_at
FROM customer_changes
QUALIFY row_number() OVER (PARTITION BY customer_id ORDER BY ts_event DESC, arrival DESC) = 1;
