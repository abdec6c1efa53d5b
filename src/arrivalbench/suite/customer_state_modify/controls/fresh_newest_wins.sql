-- Applies only changes whose ids it has not recorded yet, in one transaction, and lets each
-- batch's newest such change of a customer replace the stored state.
CREATE TABLE IF NOT EXISTS customer_latest (
    customer_id INTEGER PRIMARY KEY,
    status      VARCHAR,
    tier        VARCHAR,
    ts_event    TIMESTAMP,
    event_id    BIGINT
);

CREATE TABLE IF NOT EXISTS customer_change_ids (
    event_id    BIGINT PRIMARY KEY,
    customer_id INTEGER
);

BEGIN TRANSACTION;

CREATE TEMP TABLE fresh AS
SELECT DISTINCT ON (event_id) event_id, customer_id, status, tier, ts_event
FROM customers_batch
WHERE event_id NOT IN (SELECT event_id FROM customer_change_ids)
ORDER BY event_id, _arrival_seq;

INSERT INTO customer_change_ids SELECT event_id, customer_id FROM fresh;

INSERT OR REPLACE INTO customer_latest
SELECT customer_id, status, tier, ts_event, event_id
FROM fresh
QUALIFY row_number() OVER (PARTITION BY customer_id ORDER BY ts_event DESC, event_id DESC) = 1;

COMMIT;

CREATE OR REPLACE TABLE customer_state AS
SELECT l.customer_id, l.status, l.tier, l.ts_event AS updated_at, c.changes
FROM customer_latest l
JOIN (
    SELECT customer_id, count(*) AS changes
    FROM customer_change_ids
    GROUP BY customer_id
) c USING (customer_id);
