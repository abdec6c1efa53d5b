-- Stages the batch's unseen events, records their ids as applied, then adds them to running
-- totals; recording and adding are separate statements with no transaction around them.
CREATE TABLE IF NOT EXISTS applied_events (event_id BIGINT PRIMARY KEY);

CREATE TABLE IF NOT EXISTS net_revenue (
    store_id INTEGER,
    day      DATE,
    gross    DECIMAL(18,2),
    refunds  DECIMAL(18,2),
    net      DECIMAL(18,2),
    PRIMARY KEY (store_id, day)
);

CREATE TEMP TABLE new_events AS
SELECT DISTINCT ON (event_id) event_id, ts_event, store_id, kind, amount
FROM orders_batch
WHERE event_id NOT IN (SELECT event_id FROM applied_events)
ORDER BY event_id, _arrival_seq;

INSERT INTO applied_events SELECT event_id FROM new_events;

INSERT INTO net_revenue
SELECT store_id,
       CAST(ts_event AS DATE),
       SUM(CASE WHEN kind = 'sale' THEN amount ELSE 0 END),
       SUM(CASE WHEN kind = 'refund' THEN amount ELSE 0 END),
       SUM(CASE WHEN kind = 'sale' THEN amount ELSE -amount END)
FROM new_events
GROUP BY ALL
ON CONFLICT (store_id, day) DO UPDATE
SET gross   = net_revenue.gross + excluded.gross,
    refunds = net_revenue.refunds + excluded.refunds,
    net     = net_revenue.net + excluded.net;
