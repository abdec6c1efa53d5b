-- Rule control: the gold, except that a change setting the same tier as the change before it is
-- merged into that one (the text says every change keeps its own row).
CREATE TABLE IF NOT EXISTS tier_changes (
    event_id    BIGINT PRIMARY KEY,
    ts_event    TIMESTAMP,
    customer_id INTEGER,
    tier        VARCHAR
);

CREATE TABLE IF NOT EXISTS customer_tier_history (
    event_id    BIGINT,
    customer_id INTEGER,
    tier        VARCHAR,
    valid_from  TIMESTAMP,
    valid_to    TIMESTAMP
);

BEGIN TRANSACTION;

INSERT INTO tier_changes
SELECT event_id, ts_event, customer_id, tier
FROM customers_batch
QUALIFY row_number() OVER (PARTITION BY event_id ORDER BY _arrival_seq) = 1
ON CONFLICT DO NOTHING;

DELETE FROM customer_tier_history
WHERE customer_id IN (SELECT customer_id FROM customers_batch);

INSERT INTO customer_tier_history
SELECT event_id, customer_id, tier, ts_event,
       lead(ts_event) OVER (PARTITION BY customer_id ORDER BY ts_event, event_id)
FROM (
    SELECT *, lag(tier) OVER (PARTITION BY customer_id ORDER BY ts_event, event_id) AS previous
    FROM tier_changes
    WHERE customer_id IN (SELECT customer_id FROM customers_batch)
)
WHERE previous IS DISTINCT FROM tier;

COMMIT;
