-- Uses the history table itself as the store: rebuilds the touched customers' rows from their
-- stored rows plus the new changes, then deletes and re-inserts them as separate statements.
CREATE TABLE IF NOT EXISTS customer_tier_history (
    event_id    BIGINT,
    customer_id INTEGER,
    tier        VARCHAR,
    valid_from  TIMESTAMP,
    valid_to    TIMESTAMP
);

CREATE TEMP TABLE rebuilt AS
WITH touched AS (
    SELECT event_id, customer_id, tier, valid_from
    FROM customer_tier_history
    WHERE customer_id IN (SELECT customer_id FROM customers_batch)
    UNION
    SELECT event_id, customer_id, tier, ts_event
    FROM customers_batch
)
SELECT event_id, customer_id, tier, valid_from,
       lead(valid_from) OVER (PARTITION BY customer_id ORDER BY valid_from, event_id) AS valid_to
FROM touched;

DELETE FROM customer_tier_history
WHERE customer_id IN (SELECT customer_id FROM customers_batch);

INSERT INTO customer_tier_history SELECT * FROM rebuilt;
