-- Rule control: the gold, except that a change setting the same tier as the change before it is
-- merged into that one (the text says such changes are kept as rows of their own).
CREATE TABLE IF NOT EXISTS customer_tier (
    customer_id INTEGER PRIMARY KEY,
    tier        VARCHAR,
    updated_at  TIMESTAMP,
    event_id    BIGINT
);

CREATE TABLE IF NOT EXISTS tier_change_log (
    event_id    BIGINT,
    ts_event    TIMESTAMP,
    customer_id INTEGER,
    tier        VARCHAR
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

INSERT INTO tier_change_log
SELECT DISTINCT ON (b.event_id) b.event_id, b.ts_event, b.customer_id, b.tier
FROM customers_batch b
WHERE NOT EXISTS (SELECT 1 FROM tier_change_log l WHERE l.event_id = b.event_id)
ORDER BY b.event_id, b._arrival_seq;

CREATE OR REPLACE TABLE tier_history AS
SELECT customer_id,
       event_id,
       tier,
       ts_event                        AS valid_from,
       lead(ts_event) OVER by_customer AS valid_to,
       lead(event_id) OVER by_customer IS NULL AS is_current
FROM (
    SELECT *, lag(tier) OVER (PARTITION BY customer_id ORDER BY ts_event, event_id) AS previous
    FROM tier_change_log
)
WHERE previous IS DISTINCT FROM tier
WINDOW by_customer AS (PARTITION BY customer_id ORDER BY ts_event, event_id);
