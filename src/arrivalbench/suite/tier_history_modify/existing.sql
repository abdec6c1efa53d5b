-- customer_tier: each customer's current tier, kept by merging in the newest change of every load
-- (newest by ts_event, then event_id); a stored row is replaced only by a newer change.
CREATE TABLE IF NOT EXISTS customer_tier (
    customer_id INTEGER PRIMARY KEY,
    tier        VARCHAR,
    updated_at  TIMESTAMP,
    event_id    BIGINT
);

MERGE INTO customer_tier AS cur
USING (
    SELECT customer_id, tier, ts_event, event_id
    FROM customers_batch
    QUALIFY row_number() OVER (PARTITION BY customer_id ORDER BY ts_event DESC, event_id DESC) = 1
) AS chg
ON cur.customer_id = chg.customer_id
WHEN MATCHED AND (chg.ts_event > cur.updated_at
                  OR (chg.ts_event = cur.updated_at AND chg.event_id > cur.event_id)) THEN
    UPDATE SET tier = chg.tier, updated_at = chg.ts_event, event_id = chg.event_id
WHEN NOT MATCHED THEN
    INSERT (customer_id, tier, updated_at, event_id)
    VALUES (chg.customer_id, chg.tier, chg.ts_event, chg.event_id);
