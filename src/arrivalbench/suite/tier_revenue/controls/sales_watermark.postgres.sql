-- PostgreSQL form of sales_watermark.sql: sqlglot's transpile, with the watermark (the greatest
-- (ts_event, event_id) loaded; none before the first load) written as a row-value comparison.
/* Loads only the orders newer than the newest order already loaded (by event time, ties by */
/* event_id), so an order sent again is never counted twice; tier changes are all kept and the */
/* rollup is a point-in-time join. Right as long as orders arrive in event-time order. */
CREATE TABLE IF NOT EXISTS sales_seen (
  event_id BIGINT PRIMARY KEY,
  ts_event TIMESTAMP,
  customer_id INT,
  amount DECIMAL(12, 2)
);
CREATE TABLE IF NOT EXISTS tier_changes (
  event_id BIGINT PRIMARY KEY,
  ts_event TIMESTAMP,
  customer_id INT,
  tier TEXT
);
INSERT INTO sales_seen
SELECT DISTINCT ON (event_id)
  event_id,
  ts_event,
  customer_id,
  amount
FROM sales_batch
WHERE
  NOT EXISTS (SELECT 1 FROM sales_seen)
  OR (ts_event, event_id) > (
    SELECT ts_event, event_id FROM sales_seen ORDER BY ts_event DESC, event_id DESC LIMIT 1
  )
ORDER BY
  event_id;
INSERT INTO tier_changes
SELECT DISTINCT ON (event_id)
  event_id,
  ts_event,
  customer_id,
  tier
FROM customers_batch
ORDER BY
  event_id,
  _arrival_seq ON CONFLICT DO NOTHING;
BEGIN;
DROP TABLE IF EXISTS tier_revenue;
CREATE TABLE tier_revenue AS
WITH candidates AS (
  SELECT
    s.event_id,
    s.ts_event,
    s.amount,
    c.tier,
    ROW_NUMBER() OVER (
      PARTITION BY s.event_id
      ORDER BY c.ts_event DESC NULLS LAST, c.event_id DESC NULLS LAST
    ) AS rank_in_sale
  FROM sales_seen AS s
  LEFT JOIN tier_changes AS c
    ON c.customer_id = s.customer_id AND c.ts_event <= s.ts_event
)
SELECT
  COALESCE(tier, 'unknown') AS tier,
  CAST(ts_event AS DATE) AS day,
  CAST(SUM(amount) AS DECIMAL(18, 2)) AS revenue,
  COUNT(*) AS orders
FROM candidates
WHERE
  rank_in_sale = 1
GROUP BY
  COALESCE(tier, 'unknown'),
  CAST(ts_event AS DATE);
COMMIT;
