-- Records the load as processed first, so that a load seen before is skipped; the record and the
-- storing of its orders and tier changes are separate statements.
CREATE TABLE IF NOT EXISTS processed_batches (batch_id BIGINT PRIMARY KEY);
CREATE TABLE IF NOT EXISTS sales_seen (
    event_id BIGINT PRIMARY KEY, ts_event TIMESTAMP, customer_id INTEGER, amount DECIMAL(12,2)
);
CREATE TABLE IF NOT EXISTS tier_changes (
    event_id BIGINT PRIMARY KEY, ts_event TIMESTAMP, customer_id INTEGER, tier VARCHAR
);

CREATE TEMP TABLE new_batches AS
SELECT DISTINCT _batch_id AS batch_id
FROM (SELECT _batch_id FROM sales_batch UNION ALL SELECT _batch_id FROM customers_batch)
WHERE _batch_id NOT IN (SELECT batch_id FROM processed_batches);

INSERT INTO processed_batches SELECT batch_id FROM new_batches;

INSERT OR IGNORE INTO sales_seen
SELECT DISTINCT ON (event_id) event_id, ts_event, customer_id, amount
FROM sales_batch
WHERE _batch_id IN (SELECT batch_id FROM new_batches)
ORDER BY event_id, _arrival_seq;

INSERT OR IGNORE INTO tier_changes
SELECT DISTINCT ON (event_id) event_id, ts_event, customer_id, tier
FROM customers_batch
WHERE _batch_id IN (SELECT batch_id FROM new_batches)
ORDER BY event_id, _arrival_seq;

CREATE OR REPLACE TABLE tier_revenue AS
SELECT coalesce(tier, 'unknown')          AS tier,
       CAST(ts_event AS DATE)             AS day,
       CAST(SUM(amount) AS DECIMAL(18,2)) AS revenue,
       COUNT(*)                           AS orders
FROM (
    SELECT s.ts_event, s.amount,
           (SELECT c.tier FROM tier_changes c
            WHERE c.customer_id = s.customer_id AND c.ts_event <= s.ts_event
            ORDER BY c.ts_event DESC, c.event_id DESC
            LIMIT 1) AS tier
    FROM sales_seen s
)
GROUP BY ALL;
