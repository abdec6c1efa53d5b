-- Tags each order with the tier known for its customer (as of the order time) when the order is
-- loaded, and never revisits the tag.
CREATE TABLE IF NOT EXISTS tier_changes (
    event_id BIGINT PRIMARY KEY, ts_event TIMESTAMP, customer_id INTEGER, tier VARCHAR
);
CREATE TABLE IF NOT EXISTS sales_tagged (
    event_id BIGINT PRIMARY KEY, ts_event TIMESTAMP, amount DECIMAL(12,2), tier VARCHAR
);

INSERT OR IGNORE INTO tier_changes
SELECT DISTINCT ON (event_id) event_id, ts_event, customer_id, tier
FROM customers_batch ORDER BY event_id, _arrival_seq;

INSERT OR IGNORE INTO sales_tagged
SELECT DISTINCT ON (s.event_id) s.event_id, s.ts_event, s.amount, coalesce(c.tier, 'unknown')
FROM sales_batch s
LEFT JOIN tier_changes c
  ON c.customer_id = s.customer_id AND c.ts_event <= s.ts_event
ORDER BY s.event_id, c.ts_event DESC NULLS LAST, c.event_id DESC NULLS LAST;

CREATE OR REPLACE TABLE tier_revenue AS
SELECT tier, CAST(ts_event AS DATE) AS day, CAST(SUM(amount) AS DECIMAL(18,2)) AS revenue, COUNT(*) AS orders
FROM sales_tagged
GROUP BY ALL;
