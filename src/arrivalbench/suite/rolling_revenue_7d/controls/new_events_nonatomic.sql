-- Finds the orders not yet in history, stores them, then rebuilds the rows their days affect; each
-- step is its own statement and the affected rows are derived from the new orders only.
CREATE TABLE IF NOT EXISTS sales_history (
    event_id BIGINT PRIMARY KEY,
    ts_event TIMESTAMP,
    store_id INTEGER,
    amount   DECIMAL(12,2)
);

CREATE TABLE IF NOT EXISTS rolling_revenue_7d (
    store_id   INTEGER,
    day        DATE,
    revenue_7d DECIMAL(18,2),
    orders     BIGINT
);

CREATE TEMP TABLE new_orders AS
SELECT DISTINCT ON (event_id) event_id, ts_event, store_id, amount
FROM sales_batch
WHERE event_id NOT IN (SELECT event_id FROM sales_history)
ORDER BY event_id, _arrival_seq;

INSERT INTO sales_history SELECT * FROM new_orders;

CREATE TEMP TABLE affected AS
SELECT DISTINCT n.store_id, CAST(n.ts_event AS DATE) + CAST(k.i AS INTEGER) AS day
FROM new_orders n, range(0, 7) AS k(i);

DELETE FROM rolling_revenue_7d
WHERE (store_id, day) IN (SELECT (store_id, day) FROM affected);

INSERT INTO rolling_revenue_7d
SELECT a.store_id, a.day,
       SUM(h.amount),
       COUNT(*) FILTER (WHERE CAST(h.ts_event AS DATE) = a.day)
FROM affected a
JOIN sales_history h
  ON h.store_id = a.store_id
 AND CAST(h.ts_event AS DATE) BETWEEN a.day - 6 AND a.day
GROUP BY a.store_id, a.day
HAVING COUNT(*) FILTER (WHERE CAST(h.ts_event AS DATE) = a.day) > 0;
