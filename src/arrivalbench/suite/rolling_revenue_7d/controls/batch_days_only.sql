-- Keeps every order once but rebuilds only the rows of days that appear in the batch, assuming the
-- rows of other days are already final.
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

INSERT OR REPLACE INTO rolling_revenue_7d
SELECT d.store_id, d.day,
       (SELECT SUM(h.amount) FROM sales_history h
         WHERE h.store_id = d.store_id
           AND CAST(h.ts_event AS DATE) BETWEEN d.day - 6 AND d.day),
       (SELECT COUNT(*) FROM sales_history h
         WHERE h.store_id = d.store_id AND CAST(h.ts_event AS DATE) = d.day)
FROM (SELECT DISTINCT store_id, CAST(ts_event AS DATE) AS day FROM sales_batch) d;

COMMIT;
