-- Rule control: the gold with a window of the six preceding order days (ROWS) instead of the
-- seven calendar days ending on the day (RANGE); right only when the store has orders every day.
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
    orders     BIGINT,
    PRIMARY KEY (store_id, day)
);

BEGIN TRANSACTION;

INSERT INTO sales_history
SELECT event_id, ts_event, store_id, amount
FROM sales_batch
QUALIFY row_number() OVER (PARTITION BY event_id ORDER BY _arrival_seq) = 1
ON CONFLICT DO NOTHING;

CREATE TEMP TABLE touched AS
SELECT DISTINCT b.store_id, CAST(b.ts_event AS DATE) + CAST(k.i AS INTEGER) AS day
FROM sales_batch b
CROSS JOIN range(0, 7) AS k(i);

DELETE FROM rolling_revenue_7d r
USING touched t
WHERE r.store_id = t.store_id AND r.day = t.day;

INSERT INTO rolling_revenue_7d
WITH daily AS (
    SELECT store_id, CAST(ts_event AS DATE) AS day, SUM(amount) AS revenue, COUNT(*) AS orders
    FROM sales_history
    WHERE store_id IN (SELECT store_id FROM touched)
    GROUP BY ALL
),
windowed AS (
    SELECT store_id, day, orders,
           SUM(revenue) OVER (
               PARTITION BY store_id ORDER BY day
               ROWS BETWEEN 6 PRECEDING AND CURRENT ROW
           ) AS revenue_7d
    FROM daily
)
SELECT w.store_id, w.day, w.revenue_7d, w.orders
FROM windowed w
JOIN touched t ON t.store_id = w.store_id AND t.day = w.day;

COMMIT;
