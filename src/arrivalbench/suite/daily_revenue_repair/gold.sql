-- The repaired pipeline: every order is kept once in store_orders, whatever its amount, and the
-- rows of the store-days a load touches are recomputed from it and merged into the table.
CREATE TABLE IF NOT EXISTS store_orders (
    event_id BIGINT PRIMARY KEY,
    store_id INTEGER,
    day      DATE,
    amount   DECIMAL(12,2)
);

CREATE TABLE IF NOT EXISTS store_daily_revenue (
    store_id INTEGER,
    day      DATE,
    revenue  DECIMAL(18,2),
    orders   BIGINT,
    PRIMARY KEY (store_id, day)
);

INSERT INTO store_orders
SELECT event_id, store_id, CAST(ts_event AS DATE), amount
FROM sales_batch
QUALIFY row_number() OVER (PARTITION BY event_id ORDER BY _arrival_seq) = 1
ON CONFLICT DO NOTHING;

MERGE INTO store_daily_revenue t
USING (
    SELECT o.store_id, o.day, SUM(o.amount) AS revenue, COUNT(*) AS orders
    FROM store_orders o
    WHERE EXISTS (
        SELECT 1 FROM sales_batch b
        WHERE b.store_id = o.store_id AND CAST(b.ts_event AS DATE) = o.day
    )
    GROUP BY o.store_id, o.day
) s
ON t.store_id = s.store_id AND t.day = s.day
WHEN MATCHED THEN UPDATE SET revenue = s.revenue, orders = s.orders
WHEN NOT MATCHED THEN INSERT (store_id, day, revenue, orders) VALUES (s.store_id, s.day, s.revenue, s.orders);
