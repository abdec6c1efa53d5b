-- Keep every order once in a persistent history, then derive the rollup from that history.
CREATE TABLE IF NOT EXISTS sales_history (
    event_id BIGINT PRIMARY KEY,
    ts_event TIMESTAMP,
    store_id INTEGER,
    amount   DECIMAL(12,2)
);

INSERT INTO sales_history
SELECT event_id, ts_event, store_id, amount
FROM sales_batch
QUALIFY row_number() OVER (PARTITION BY event_id ORDER BY _arrival_seq) = 1
ON CONFLICT DO NOTHING;

CREATE TABLE IF NOT EXISTS daily_revenue (
    store_id INTEGER,
    day      DATE,
    revenue  DECIMAL(18,2),
    orders   BIGINT
);

BEGIN TRANSACTION;
DELETE FROM daily_revenue;
INSERT INTO daily_revenue
SELECT store_id, CAST(ts_event AS DATE), SUM(amount), COUNT(*)
FROM sales_history
GROUP BY ALL;
COMMIT;
