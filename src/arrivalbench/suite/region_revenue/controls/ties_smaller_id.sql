-- Rule control: the gold, except that of two rows with the same ts_event the smaller event_id is
-- the more recent (the text says the larger).
CREATE TABLE IF NOT EXISTS orders_seen (
    event_id    BIGINT PRIMARY KEY,
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
SELECT event_id, customer_id, amount
FROM sales_batch
QUALIFY row_number() OVER (PARTITION BY event_id ORDER BY _arrival_seq) = 1
ON CONFLICT DO NOTHING;

MERGE INTO customer_region AS cur
USING (
    SELECT customer_id, region, ts_event, event_id
    FROM customers_batch
    QUALIFY row_number() OVER (PARTITION BY customer_id ORDER BY ts_event DESC, event_id ASC) = 1
) AS chg
ON cur.customer_id = chg.customer_id
WHEN MATCHED AND (chg.ts_event > cur.ts_event
                  OR (chg.ts_event = cur.ts_event AND chg.event_id < cur.event_id)) THEN
    UPDATE SET region = chg.region, ts_event = chg.ts_event, event_id = chg.event_id
WHEN NOT MATCHED THEN
    INSERT (customer_id, region, ts_event, event_id)
    VALUES (chg.customer_id, chg.region, chg.ts_event, chg.event_id);

CREATE OR REPLACE TABLE region_revenue AS
SELECT CASE WHEN c.customer_id IS NULL THEN 'unknown' ELSE c.region END AS region,
       CAST(SUM(o.amount) AS DECIMAL(18,2)) AS revenue,
       COUNT(*)                             AS orders
FROM orders_seen o
LEFT JOIN customer_region c USING (customer_id)
GROUP BY ALL;
