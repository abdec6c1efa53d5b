-- Adds each batch's distinct events to running per-store-day totals; keeps no record of the
-- events already added in earlier batches.
CREATE TABLE IF NOT EXISTS net_revenue (
    store_id INTEGER,
    day      DATE,
    gross    DECIMAL(18,2),
    refunds  DECIMAL(18,2),
    net      DECIMAL(18,2),
    PRIMARY KEY (store_id, day)
);

INSERT INTO net_revenue
SELECT store_id,
       CAST(ts_event AS DATE),
       SUM(CASE WHEN kind = 'sale' THEN amount ELSE 0 END),
       SUM(CASE WHEN kind = 'refund' THEN amount ELSE 0 END),
       SUM(CASE WHEN kind = 'sale' THEN amount ELSE -amount END)
FROM (SELECT DISTINCT ON (event_id) * FROM orders_batch ORDER BY event_id, _arrival_seq)
GROUP BY ALL
ON CONFLICT (store_id, day) DO UPDATE
SET gross   = net_revenue.gross + excluded.gross,
    refunds = net_revenue.refunds + excluded.refunds,
    net     = net_revenue.net + excluded.net;
