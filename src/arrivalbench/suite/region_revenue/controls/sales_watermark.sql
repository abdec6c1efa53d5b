-- Loads only the orders newer than the newest order already loaded (by event time, ties by
-- event_id), so an order sent again is never counted twice; region changes are kept correctly.
-- Right as long as orders arrive in event-time order.
CREATE TABLE IF NOT EXISTS orders_seen (
    event_id    BIGINT PRIMARY KEY,
    ts_event    TIMESTAMP,
    customer_id INTEGER,
    amount      DECIMAL(12,2)
);

CREATE TABLE IF NOT EXISTS customer_region (
    customer_id INTEGER PRIMARY KEY,
    region      VARCHAR,
    ts_event    TIMESTAMP,
    event_id    BIGINT
);

INSERT INTO orders_seen
SELECT DISTINCT ON (event_id) event_id, ts_event, customer_id, amount
FROM sales_batch
WHERE (ts_event, event_id) > (
    SELECT coalesce(max((ts_event, event_id)), (TIMESTAMP '-infinity', 0)) FROM orders_seen
)
ORDER BY event_id;

MERGE INTO customer_region AS cur
USING (
    SELECT customer_id, region, ts_event, event_id
    FROM customers_batch
    QUALIFY row_number() OVER (PARTITION BY customer_id ORDER BY ts_event DESC, event_id DESC) = 1
) AS chg
ON cur.customer_id = chg.customer_id
WHEN MATCHED AND (chg.ts_event > cur.ts_event
                  OR (chg.ts_event = cur.ts_event AND chg.event_id > cur.event_id)) THEN
    UPDATE SET region = chg.region, ts_event = chg.ts_event, event_id = chg.event_id
WHEN NOT MATCHED THEN
    INSERT (customer_id, region, ts_event, event_id)
    VALUES (chg.customer_id, chg.region, chg.ts_event, chg.event_id);

CREATE OR REPLACE TABLE region_revenue AS
SELECT coalesce(c.region, 'unknown')       AS region,
       CAST(SUM(o.amount) AS DECIMAL(18,2)) AS revenue,
       COUNT(*)                             AS orders
FROM orders_seen o
LEFT JOIN customer_region c USING (customer_id)
GROUP BY ALL;
