-- Rule control: a full rebuild from the kept history, except that a refund counts on the date of
-- the sale it refunds (the text says on the date of its own ts_event).
CREATE TABLE IF NOT EXISTS order_events (
    event_id BIGINT PRIMARY KEY,
    ts_event TIMESTAMP,
    order_id BIGINT,
    store_id INTEGER,
    kind     VARCHAR,
    amount   DECIMAL(12,2)
);

INSERT INTO order_events
SELECT event_id, ts_event, order_id, store_id, kind, amount
FROM orders_batch
QUALIFY row_number() OVER (PARTITION BY event_id ORDER BY _arrival_seq) = 1
ON CONFLICT DO NOTHING;

CREATE OR REPLACE TABLE net_revenue AS
SELECT store_id, day, gross, refunds, gross - refunds AS net
FROM (
    SELECT e.store_id,
           coalesce(CAST(s.ts_event AS DATE), CAST(e.ts_event AS DATE))  AS day,
           coalesce(SUM(e.amount) FILTER (WHERE e.kind = 'sale'), 0)     AS gross,
           coalesce(SUM(e.amount) FILTER (WHERE e.kind = 'refund'), 0)   AS refunds
    FROM order_events e
    LEFT JOIN order_events s
      ON e.kind = 'refund' AND s.kind = 'sale' AND s.order_id = e.order_id
    GROUP BY ALL
);
