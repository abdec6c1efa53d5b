-- The existing merge with the tie-break inside a load corrected; a stored row is still replaced
-- by any change at least as new by ts_event alone.
CREATE TABLE IF NOT EXISTS customer_status (
    customer_id INTEGER PRIMARY KEY,
    status      VARCHAR,
    updated_at  TIMESTAMP
);

MERGE INTO customer_status AS cur
USING (
    SELECT customer_id, status, ts_event
    FROM customers_batch
    QUALIFY row_number() OVER (PARTITION BY customer_id ORDER BY ts_event DESC, event_id DESC) = 1
) AS chg
ON cur.customer_id = chg.customer_id
WHEN MATCHED AND chg.ts_event >= cur.updated_at THEN
    UPDATE SET status = chg.status, updated_at = chg.ts_event
WHEN NOT MATCHED THEN
    INSERT (customer_id, status, updated_at)
    VALUES (chg.customer_id, chg.status, chg.ts_event);
