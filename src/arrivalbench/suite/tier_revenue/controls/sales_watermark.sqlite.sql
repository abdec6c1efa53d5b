-- SQLite form of sales_watermark.sql: sqlglot's transpile, with the watermark (the greatest
-- (ts_event, event_id) loaded; none before the first load) written as a row-value comparison.
/* Loads only the orders newer than the newest order already loaded (by event time, ties by */
/* event_id), so an order sent again is never counted twice; tier changes are all kept and the */
/* rollup is a point-in-time join. Right as long as orders arrive in event-time order. */
CREATE TABLE IF NOT EXISTS sales_seen (
  event_id INTEGER PRIMARY KEY,
  ts_event TIMESTAMPNTZ,
  customer_id INTEGER,
  amount REAL(12, 2)
);
CREATE TABLE IF NOT EXISTS tier_changes (
  event_id INTEGER PRIMARY KEY,
  ts_event TIMESTAMPNTZ,
  customer_id INTEGER,
  tier TEXT
);
INSERT INTO sales_seen
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
    NOT EXISTS (SELECT 1 FROM sales_seen)
    OR (ts_event, event_id) > (
      SELECT ts_event, event_id FROM sales_seen ORDER BY ts_event DESC, event_id DESC LIMIT 1
    )
) AS _t
WHERE
  _row_number = 1;
INSERT OR IGNORE INTO tier_changes
SELECT
  event_id,
  ts_event,
  customer_id,
  tier
FROM (
  SELECT
    event_id AS event_id,
    ts_event AS ts_event,
    customer_id AS customer_id,
    tier AS tier,
    ROW_NUMBER() OVER (
      PARTITION BY event_id
      ORDER BY event_id IS NULL ASC, event_id, _arrival_seq IS NULL ASC, _arrival_seq
    ) AS _row_number
  FROM customers_batch
) AS _t
WHERE
  _row_number = 1;
SAVEPOINT arrivalbench_replace;
DROP TABLE IF EXISTS tier_revenue;
CREATE TABLE tier_revenue AS
WITH candidates AS (
  SELECT
    s.event_id,
    s.ts_event,
    s.amount,
    c.tier,
    ROW_NUMBER() OVER (PARTITION BY s.event_id ORDER BY c.ts_event DESC, c.event_id DESC) AS rank_in_sale
  FROM sales_seen AS s
  LEFT JOIN tier_changes AS c
    ON c.customer_id = s.customer_id AND c.ts_event <= s.ts_event
)
SELECT
  COALESCE(tier, 'unknown') AS tier,
  DATE(ts_event) AS day,
  CAST(SUM(amount) AS REAL(18, 2)) AS revenue,
  COUNT(*) AS orders
FROM candidates
WHERE
  rank_in_sale = 1
GROUP BY
  COALESCE(tier, 'unknown'),
  DATE(ts_event);
RELEASE arrivalbench_replace;
