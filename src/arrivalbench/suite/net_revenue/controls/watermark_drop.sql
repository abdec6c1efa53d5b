-- Loads only events at or after the newest event time already loaded, so an event whose time is
-- older than that is dropped; otherwise rebuilds the table from the kept events.
CREATE TABLE IF NOT EXISTS order_events (
    event_id BIGINT PRIMARY KEY,
    ts_event TIMESTAMP,
    store_id INTEGER,
    kind     VARCHAR,
    amount   DECIMAL(12,2)
);

INSERT INTO order_events
SELECT event_id, ts_event, store_id, kind, amount
FROM orders_batch
WHERE ts_event >= (SELECT coalesce(max(ts_event), TIMESTAMP '1900-01-01') FROM order_events)
QUALIFY row_number() OVER (PARTITION BY event_id ORDER BY _arrival_seq) = 1
ON CONFLICT DO NOTHING;

CREATE OR REPLACE TABLE net_revenue AS
SELECT store_id,
       CAST(ts_event AS DATE) AS day,
       CAST(SUM(CASE WHEN kind = 'sale' THEN amount ELSE 0 END) AS DECIMAL(18,2)) AS gross,
       CAST(SUM(CASE WHEN kind = 'refund' THEN amount ELSE 0 END) AS DECIMAL(18,2)) AS refunds,
       CAST(SUM(CASE WHEN kind = 'sale' THEN amount ELSE -amount END) AS DECIMAL(18,2)) AS net
FROM order_events
GROUP BY ALL;
