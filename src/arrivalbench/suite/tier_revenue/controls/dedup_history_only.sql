-- Keeps an order unless its event_id is already stored; orders repeated inside one load are kept
-- as many times as they appear.
CREATE TABLE IF NOT EXISTS sales_seen (
    event_id BIGINT, ts_event TIMESTAMP, customer_id INTEGER, amount DECIMAL(12,2)
);
CREATE TABLE IF NOT EXISTS tier_changes (
    event_id BIGINT PRIMARY KEY, ts_event TIMESTAMP, customer_id INTEGER, tier VARCHAR
);

INSERT INTO sales_seen
SELECT event_id, ts_event, customer_id, amount
FROM sales_batch b
WHERE NOT EXISTS (SELECT 1 FROM sales_seen h WHERE h.event_id = b.event_id);

INSERT OR IGNORE INTO tier_changes
SELECT DISTINCT ON (event_id) event_id, ts_event, customer_id, tier
FROM customers_batch ORDER BY event_id, _arrival_seq;

CREATE OR REPLACE TABLE tier_revenue AS
SELECT coalesce(c.tier, 'unknown') AS tier, CAST(s.ts_event AS DATE) AS day,
       CAST(SUM(s.amount) AS DECIMAL(18,2)) AS revenue, COUNT(*) AS orders
FROM sales_seen s
LEFT JOIN tier_changes c
  ON c.customer_id = s.customer_id
 AND c.ts_event = (SELECT max(x.ts_event) FROM tier_changes x
                   WHERE x.customer_id = s.customer_id AND x.ts_event <= s.ts_event)
 AND c.event_id = (SELECT max(y.event_id) FROM tier_changes y
                   WHERE y.customer_id = s.customer_id AND y.ts_event = c.ts_event)
GROUP BY ALL;
