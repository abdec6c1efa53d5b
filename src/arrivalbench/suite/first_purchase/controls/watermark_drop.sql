-- Keeps only purchases at or after the newest purchase time already stored, so a purchase whose
-- time is older than that is dropped; otherwise derives the table from the stored purchases.
CREATE TABLE IF NOT EXISTS purchases (
    event_id    BIGINT PRIMARY KEY,
    ts_event    TIMESTAMP,
    store_id    INTEGER,
    customer_id INTEGER
);

INSERT INTO purchases
SELECT DISTINCT event_id, ts_event, store_id, customer_id
FROM sales_batch
WHERE ts_event >= (SELECT coalesce(max(ts_event), TIMESTAMP '1900-01-01') FROM purchases)
ON CONFLICT DO NOTHING;

CREATE OR REPLACE TABLE first_purchase AS
SELECT customer_id,
       ts_event AS first_purchase_at,
       store_id AS first_store_id,
       count(DISTINCT CAST(ts_event AS DATE)) OVER (PARTITION BY customer_id) AS purchase_days
FROM purchases
QUALIFY row_number() OVER (PARTITION BY customer_id ORDER BY ts_event, event_id) = 1;
