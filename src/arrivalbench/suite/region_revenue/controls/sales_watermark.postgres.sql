-- PostgreSQL form of sales_watermark.sql: sqlglot's transpile, with the watermark (the greatest
-- (ts_event, event_id) loaded; none before the first load) written as a row-value comparison.
/* Loads only the orders newer than the newest order already loaded (by event time, ties by */
/* event_id), so an order sent again is never counted twice; region changes are kept correctly. */
/* Right as long as orders arrive in event-time order. */
CREATE TABLE IF NOT EXISTS orders_seen (
  event_id BIGINT PRIMARY KEY,
  ts_event TIMESTAMP,
  customer_id INT,
  amount DECIMAL(12, 2)
);
CREATE TABLE IF NOT EXISTS customer_region (
  customer_id INT PRIMARY KEY,
  region TEXT,
  ts_event TIMESTAMP,
  event_id BIGINT
);
INSERT INTO orders_seen
SELECT DISTINCT ON (event_id)
  event_id,
  ts_event,
  customer_id,
  amount
FROM sales_batch
WHERE
  NOT EXISTS (SELECT 1 FROM orders_seen)
  OR (ts_event, event_id) > (
    SELECT ts_event, event_id FROM orders_seen ORDER BY ts_event DESC, event_id DESC LIMIT 1
  )
ORDER BY
  event_id;
MERGE INTO customer_region AS cur
USING (
  SELECT
    customer_id,
    region,
    ts_event,
    event_id
  FROM (
    SELECT
      customer_id,
      region,
      ts_event,
      event_id,
      ROW_NUMBER() OVER (
        PARTITION BY customer_id
        ORDER BY ts_event DESC NULLS LAST, event_id DESC NULLS LAST
      ) AS _w
    FROM customers_batch
  ) AS _t
  WHERE
    _w = 1
) AS chg
ON cur.customer_id = chg.customer_id
WHEN MATCHED AND (
  chg.ts_event > cur.ts_event
  OR (
    chg.ts_event = cur.ts_event AND chg.event_id > cur.event_id
  )
) THEN UPDATE SET
  region = chg.region,
  ts_event = chg.ts_event,
  event_id = chg.event_id
WHEN NOT MATCHED THEN INSERT (customer_id, region, ts_event, event_id) VALUES (chg.customer_id, chg.region, chg.ts_event, chg.event_id);
BEGIN;
DROP TABLE IF EXISTS region_revenue;
CREATE TABLE region_revenue AS
SELECT
  COALESCE(c.region, 'unknown') AS region,
  CAST(SUM(o.amount) AS DECIMAL(18, 2)) AS revenue,
  COUNT(*) AS orders
FROM orders_seen AS o
LEFT JOIN customer_region AS c
  USING (customer_id)
GROUP BY
  COALESCE(c.region, 'unknown');
COMMIT;
