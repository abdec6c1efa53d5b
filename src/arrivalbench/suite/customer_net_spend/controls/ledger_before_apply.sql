-- Records the load's unseen event ids as applied, then adds those rows onto running per-customer
-- totals; recording and adding are separate statements with no transaction around them.
CREATE TABLE IF NOT EXISTS applied_events (event_id BIGINT PRIMARY KEY);

CREATE TABLE IF NOT EXISTS customer_net_spend (
    customer_id INTEGER PRIMARY KEY,
    gross       DECIMAL(18,2),
    refunds     DECIMAL(18,2),
    net         DECIMAL(18,2),
    orders      BIGINT
);

CREATE TEMP TABLE unseen AS
SELECT DISTINCT ON (event_id) event_id, customer_id, kind, amount
FROM orders_batch
WHERE event_id NOT IN (SELECT event_id FROM applied_events)
ORDER BY event_id, _arrival_seq;

INSERT INTO applied_events SELECT event_id FROM unseen;

INSERT INTO customer_net_spend
SELECT customer_id,
       SUM(CASE WHEN kind = 'sale' THEN amount ELSE 0 END),
       SUM(CASE WHEN kind = 'refund' THEN amount ELSE 0 END),
       SUM(CASE WHEN kind = 'sale' THEN amount ELSE -amount END),
       COUNT(*) FILTER (WHERE kind = 'sale')
FROM unseen
GROUP BY customer_id
ON CONFLICT (customer_id) DO UPDATE SET
    gross   = customer_net_spend.gross + excluded.gross,
    refunds = customer_net_spend.refunds + excluded.refunds,
    net     = customer_net_spend.net + excluded.net,
    orders  = customer_net_spend.orders + excluded.orders;
