-- Signs refunds correctly, but keeps only rows at or after the newest event time already kept (a
-- watermark), so an older sale or refund is dropped.
CREATE TABLE IF NOT EXISTS order_history (
    event_id BIGINT PRIMARY KEY,
    ts_event TIMESTAMP,
    store_id INTEGER,
    kind     VARCHAR,
    amount   DECIMAL(12,2)
);

INSERT INTO order_history
SELECT event_id, ts_event, store_id, kind, amount
FROM orders_batch
WHERE ts_event >= (SELECT coalesce(max(ts_event), TIMESTAMP '1900-01-01') FROM order_history)
QUALIFY row_number() OVER (PARTITION BY event_id ORDER BY _arrival_seq) = 1
ON CONFLICT DO NOTHING;

CREATE OR REPLACE TABLE store_daily_net AS
SELECT store_id,
       CAST(ts_event AS DATE) AS day,
       CAST(SUM(CASE WHEN kind = 'refund' THEN -amount ELSE amount END) AS DECIMAL(18,2)) AS net_revenue
FROM order_history
GROUP BY store_id, CAST(ts_event AS DATE);
