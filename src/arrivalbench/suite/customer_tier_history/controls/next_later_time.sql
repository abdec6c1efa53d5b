-- Rule control: the gold, except that valid_to is the customer's next later ts_event, so changes
-- sharing a ts_event all run to the next later change (the text orders them by event_id: the
-- first of two gets valid_to equal to its valid_from).
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
SELECT c.event_id, c.customer_id, c.tier, c.ts_event,
       (SELECT min(n.ts_event) FROM tier_changes n
        WHERE n.customer_id = c.customer_id AND n.ts_event > c.ts_event)
FROM tier_changes c
WHERE c.customer_id IN (SELECT customer_id FROM customers_batch);

COMMIT;
