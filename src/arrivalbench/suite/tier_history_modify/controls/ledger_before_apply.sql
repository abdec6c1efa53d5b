-- Records the load as processed first, so that a load seen before is skipped; the record and the
-- stored changes are written by separate statements.
CREATE TABLE IF NOT EXISTS loaded_batches (batch_id BIGINT PRIMARY KEY);

CREATE TABLE IF NOT EXISTS tier_change_log (
    event_id    BIGINT PRIMARY KEY,
    ts_event    TIMESTAMP,
    customer_id INTEGER,
    tier        VARCHAR
);

CREATE TEMP TABLE unseen AS
SELECT * FROM customers_batch
WHERE _batch_id NOT IN (SELECT batch_id FROM loaded_batches);

INSERT INTO loaded_batches
SELECT DISTINCT _batch_id FROM customers_batch
ON CONFLICT DO NOTHING;

INSERT OR IGNORE INTO tier_change_log
SELECT DISTINCT ON (event_id) event_id, ts_event, customer_id, tier
FROM unseen
ORDER BY event_id, _arrival_seq;

CREATE OR REPLACE TABLE tier_history AS
SELECT customer_id, event_id, tier, ts_event AS valid_from,
       lead(ts_event) OVER w AS valid_to,
       lead(ts_event) OVER w IS NULL AS is_current
FROM tier_change_log
WINDOW w AS (PARTITION BY customer_id ORDER BY ts_event, event_id);
