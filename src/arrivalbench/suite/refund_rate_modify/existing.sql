-- store_refund_summary: gross sales and refunds per store, kept up to date by adding each load's
-- sums onto the stored totals.
CREATE TABLE IF NOT EXISTS store_refund_summary (
    store_id INTEGER PRIMARY KEY,
    gross    DECIMAL(18,2),
    refunds  DECIMAL(18,2)
);

INSERT INTO store_refund_summary
SELECT store_id,
       coalesce(SUM(amount) FILTER (WHERE kind = 'sale'), 0),
       coalesce(SUM(amount) FILTER (WHERE kind = 'refund'), 0)
FROM orders_batch
GROUP BY store_id
ON CONFLICT (store_id) DO UPDATE SET
    gross   = store_refund_summary.gross + excluded.gross,
    refunds = store_refund_summary.refunds + excluded.refunds;
