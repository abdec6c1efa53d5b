-- Rule control: the gold, except that changes counts only the customer's rows in the latest rows
-- received (the text says everything the feed has provided so far).
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

INSERT INTO customer_change_ids
SELECT DISTINCT event_id, customer_id
FROM customers_batch
ON CONFLICT DO NOTHING;

MERGE INTO customer_latest AS cur
USING (
    SELECT customer_id, status, tier, ts_event, event_id
    FROM customers_batch
    QUALIFY row_number() OVER (PARTITION BY customer_id ORDER BY ts_event DESC, event_id DESC) = 1
) AS chg
ON cur.customer_id = chg.customer_id
WHEN MATCHED AND (chg.ts_event > cur.ts_event
                  OR (chg.ts_event = cur.ts_event AND chg.event_id > cur.event_id)) THEN
    UPDATE SET status = chg.status, tier = chg.tier, ts_event = chg.ts_event, event_id = chg.event_id
WHEN NOT MATCHED THEN
    INSERT (customer_id, status, tier, ts_event, event_id)
    VALUES (chg.customer_id, chg.status, chg.tier, chg.ts_event, chg.event_id);

CREATE OR REPLACE TABLE customer_state AS
SELECT l.customer_id, l.status, l.tier, l.ts_event AS updated_at, c.changes
FROM customer_latest l
JOIN (
    SELECT customer_id, count(DISTINCT event_id) AS changes
    FROM customers_batch
    GROUP BY customer_id
) c USING (customer_id);
