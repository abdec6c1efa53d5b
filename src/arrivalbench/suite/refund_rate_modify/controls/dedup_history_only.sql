-- Appends the load's rows whose event_id is not stored yet and rebuilds the summary; a row listed
-- two times in the same load is stored two times.
CREATE TABLE IF NOT EXISTS order_history (
    event_id BIGINT,
    store_id INTEGER,
    kind     VARCHAR,
    amount   DECIMAL(12,2)
);

INSERT INTO order_history
SELECT event_id, store_id, kind, amount
FROM orders_batch
WHERE event_id NOT IN (SELECT event_id FROM order_history);

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
