-- SQLite form of sales_watermark.sql: sqlglot's transpile, with the watermark (the greatest
-- (ts_event, event_id) loaded; none before the first load) written as a row-value comparison.
/* Loads only the orders newer than the newest order already loaded (by event time, ties by */
/* event_id), so an order sent again is never counted twice; region changes are kept correctly. */
/* Right as long as orders arrive in event-time order. */
CREATE TABLE IF NOT EXISTS orders_seen (
  event_id INTEGER PRIMARY KEY,
  ts_event TIMESTAMPNTZ,
  customer_id INTEGER,
  amount REAL(12, 2)
);
CREATE TABLE IF NOT EXISTS customer_region (
  customer_id INTEGER PRIMARY KEY,
  region TEXT,
  ts_event TIMESTAMPNTZ,
  event_id INTEGER
);
INSERT INTO orders_seen
SELECT
  event_id,
  ts_event,
  customer_id,
  amount
FROM (
  SELECT
    event_id AS event_id,
    ts_event AS ts_event,
    customer_id AS customer_id,
    amount AS amount,
    ROW_NUMBER() OVER (PARTITION BY event_id ORDER BY event_id IS NULL ASC, event_id) AS _row_number
  FROM sales_batch
  WHERE
    NOT EXISTS (SELECT 1 FROM orders_seen)
    OR (ts_event, event_id) > (
      SELECT ts_event, event_id FROM orders_seen ORDER BY ts_event DESC, event_id DESC LIMIT 1
    )
) AS _t
WHERE
  _row_number = 1;
SAVEPOINT arrivalbench_merge;
DROP TABLE IF EXISTS temp.__arrivalbench_merge_source;
CREATE TEMP TABLE __arrivalbench_merge_source AS SELECT chg.*, EXISTS (SELECT 1 FROM customer_region AS cur WHERE cur.customer_id = chg.customer_id) AS __matched, CASE WHEN EXISTS (SELECT 1 FROM customer_region AS cur WHERE cur.customer_id = chg.customer_id AND ((chg.ts_event > cur.ts_event OR (chg.ts_event = cur.ts_event AND chg.event_id > cur.event_id)))) THEN 1 END AS __clause FROM (SELECT customer_id, region, ts_event, event_id FROM (SELECT customer_id, region, ts_event, event_id, ROW_NUMBER() OVER (PARTITION BY customer_id ORDER BY ts_event DESC, event_id DESC) AS _w FROM customers_batch) AS _t WHERE _w = 1) AS chg;
UPDATE customer_region AS cur SET region = chg.region, ts_event = chg.ts_event, event_id = chg.event_id FROM temp.__arrivalbench_merge_source AS chg WHERE cur.customer_id = chg.customer_id AND chg.__clause = 1;
INSERT INTO customer_region (customer_id, region, ts_event, event_id) SELECT chg.customer_id, chg.region, chg.ts_event, chg.event_id FROM temp.__arrivalbench_merge_source AS chg WHERE NOT chg.__matched;
DROP TABLE temp.__arrivalbench_merge_source;
RELEASE arrivalbench_merge;
SAVEPOINT arrivalbench_replace;
DROP TABLE IF EXISTS region_revenue;
CREATE TABLE region_revenue AS
SELECT
  COALESCE(c.region, 'unknown') AS region,
  CAST(SUM(o.amount) AS REAL(18, 2)) AS revenue,
  COUNT(*) AS orders
FROM orders_seen AS o
LEFT JOIN customer_region AS c
  USING (customer_id)
GROUP BY
  COALESCE(c.region, 'unknown');
RELEASE arrivalbench_replace;
