-- The existing additive totals, moved to a helper table, with the summary and its rate published
-- from those totals by a separate statement after each load.
CREATE TABLE IF NOT EXISTS store_totals (
    store_id INTEGER PRIMARY KEY,
    gross    DECIMAL(18,2),
    refunds  DECIMAL(18,2)
);

INSERT INTO store_totals
SELECT store_id,
       coalesce(SUM(amount) FILTER (WHERE kind = 'sale'), 0),
       coalesce(SUM(amount) FILTER (WHERE kind = 'refund'), 0)
FROM orders_batch
GROUP BY store_id
ON CONFLICT (store_id) DO UPDATE SET
    gross   = store_totals.gross + excluded.gross,
    refunds = store_totals.refunds + excluded.refunds;

CREATE OR REPLACE TABLE store_refund_summary AS
SELECT store_id, gross, refunds,
       CASE WHEN gross = 0 THEN NULL ELSE CAST(refunds AS DOUBLE) / CAST(gross AS DOUBLE) END AS refund_rate
FROM store_totals;
