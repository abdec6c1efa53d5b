-- Keeps only rows at or after the newest event time already kept (a watermark), so an older sale
-- or refund is dropped; the summary is rebuilt from the kept rows.
CREATE TABLE IF NOT EXISTS order_history (
    event_id BIGINT PRIMARY KEY,
    ts_event TIMESTAMP,
    store_id INTEGER,
    kind     VARCHAR,
    amount   DECIMAL(12,2)
);

INSERT OR IGNORE INTO order_history
SELECT DISTINCT ON (event_id) event_id, ts_event, store_id, kind, amount
FROM orders_batch
WHERE ts_event >= (SELECT coalesce(max(ts_event), TIMESTAMP '1900-01-01') FROM order_history)
ORDER BY event_id, _arrival_seq;

CREATE OR REPLACE TABLE store_refund_summary AS
SELECT store_id, gross, refunds,
       CASE WHEN gross = 0 THEN NULL ELSE CAST(refunds AS DOUBLE) / CAST(gross AS DOUBLE) END AS refund_rate
FROM (
    SELECT store_id,
           CAST(coalesce(SUM(amount) FILTER (WHERE kind = 'sale'), 0) AS DECIMAL(18,2))   AS gross,
           CAST(coalesce(SUM(amount) FILTER (WHERE kind = 'refund'), 0) AS DECIMAL(18,2)) AS refunds
    FROM order_history
    GROUP BY store_id
);
