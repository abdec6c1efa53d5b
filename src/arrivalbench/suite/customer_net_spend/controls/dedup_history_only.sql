-- Appends the load's rows whose event_id is not stored yet and rebuilds the totals; a row listed
-- two times in the same load is stored two times.
CREATE TABLE IF NOT EXISTS order_rows (
    event_id    BIGINT,
    customer_id INTEGER,
    kind        VARCHAR,
    amount      DECIMAL(12,2)
);

INSERT INTO order_rows
SELECT b.event_id, b.customer_id, b.kind, b.amount
FROM orders_batch b
LEFT JOIN order_rows h ON h.event_id = b.event_id
WHERE h.event_id IS NULL;

CREATE OR REPLACE TABLE customer_net_spend AS
SELECT customer_id,
       CAST(SUM(CASE WHEN kind = 'sale' THEN amount ELSE 0 END) AS DECIMAL(18,2))   AS gross,
       CAST(SUM(CASE WHEN kind = 'refund' THEN amount ELSE 0 END) AS DECIMAL(18,2)) AS refunds,
       CAST(SUM(CASE WHEN kind = 'sale' THEN amount ELSE -amount END) AS DECIMAL(18,2)) AS net,
       COUNT(*) FILTER (WHERE kind = 'sale')                                         AS orders
FROM order_rows
GROUP BY customer_id;
