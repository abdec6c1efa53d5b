-- Signs refunds correctly and adds the load's unapplied rows onto the stored daily figures, then
-- records their ids as applied in a separate statement.
CREATE TABLE IF NOT EXISTS applied_rows (event_id BIGINT PRIMARY KEY);

CREATE TABLE IF NOT EXISTS store_daily_net (
    store_id    INTEGER,
    day         DATE,
    net_revenue DECIMAL(18,2),
    PRIMARY KEY (store_id, day)
);

INSERT INTO store_daily_net
SELECT store_id, CAST(ts_event AS DATE), SUM(CASE WHEN kind = 'refund' THEN -amount ELSE amount END)
FROM (
    SELECT DISTINCT ON (event_id) *
    FROM orders_batch
    WHERE event_id NOT IN (SELECT event_id FROM applied_rows)
)
GROUP BY ALL
ON CONFLICT (store_id, day) DO UPDATE SET net_revenue = store_daily_net.net_revenue + excluded.net_revenue;

INSERT INTO applied_rows
SELECT DISTINCT event_id FROM orders_batch
ON CONFLICT DO NOTHING;
