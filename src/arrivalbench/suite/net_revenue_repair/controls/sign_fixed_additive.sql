-- Signs refunds correctly, but adds each load's distinct rows onto the stored daily figures with
-- no record of rows added by earlier loads.
CREATE TABLE IF NOT EXISTS store_daily_net (
    store_id    INTEGER,
    day         DATE,
    net_revenue DECIMAL(18,2),
    PRIMARY KEY (store_id, day)
);

INSERT INTO store_daily_net
SELECT store_id, CAST(ts_event AS DATE), SUM(CASE WHEN kind = 'refund' THEN -amount ELSE amount END)
FROM (SELECT DISTINCT ON (event_id) * FROM orders_batch ORDER BY event_id, _arrival_seq)
GROUP BY ALL
ON CONFLICT (store_id, day) DO UPDATE SET net_revenue = store_daily_net.net_revenue + excluded.net_revenue;
