-- Stores only rows at or after the newest event time already stored (a watermark), so an older
-- sale or refund is dropped; the totals are rebuilt from what was stored.
CREATE TABLE IF NOT EXISTS order_rows (
    event_id    BIGINT PRIMARY KEY,
    ts_event    TIMESTAMP,
    customer_id INTEGER,
    kind        VARCHAR,
    amount      DECIMAL(12,2)
);

INSERT OR IGNORE INTO order_rows
SELECT DISTINCT ON (event_id) event_id, ts_event, customer_id, kind, amount
FROM orders_batch
WHERE ts_event >= (SELECT coalesce(max(ts_event), TIMESTAMP '1900-01-01') FROM order_rows)
ORDER BY event_id, _arrival_seq;

CREATE OR REPLACE TABLE customer_net_spend AS
SELECT customer_id,
       CAST(SUM(CASE WHEN kind = 'sale' THEN amount ELSE 0 END) AS DECIMAL(18,2))   AS gross,
       CAST(SUM(CASE WHEN kind = 'refund' THEN amount ELSE 0 END) AS DECIMAL(18,2)) AS refunds,
       CAST(SUM(CASE WHEN kind = 'sale' THEN amount ELSE -amount END) AS DECIMAL(18,2)) AS net,
       COUNT(*) FILTER (WHERE kind = 'sale')                                         AS orders
FROM order_rows
GROUP BY customer_id;
