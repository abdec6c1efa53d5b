-- Stores a change unless its event_id is already stored; a change sent more than once inside one
-- load is stored as many times as it appears. The history is rebuilt from the stored changes.
CREATE TABLE IF NOT EXISTS tier_changes (
    event_id    BIGINT,
    ts_event    TIMESTAMP,
    customer_id INTEGER,
    tier        VARCHAR
);

INSERT INTO tier_changes
SELECT event_id, ts_event, customer_id, tier
FROM customers_batch b
WHERE NOT EXISTS (SELECT 1 FROM tier_changes t WHERE t.event_id = b.event_id);

CREATE OR REPLACE TABLE customer_tier_history AS
SELECT event_id, customer_id, tier, ts_event AS valid_from,
       lead(ts_event) OVER (PARTITION BY customer_id ORDER BY ts_event, event_id) AS valid_to
FROM tier_changes;
