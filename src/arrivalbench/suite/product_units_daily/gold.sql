-- Full recompute from a persisted log: the batch's first copy of each order is appended when its
-- event_id is not in the log yet (anti-join), and the table is rebuilt from the whole log.
CREATE TABLE IF NOT EXISTS sales_log (
    event_id   BIGINT,
    ts_event   TIMESTAMP,
    product_id INTEGER,
    quantity   INTEGER,
    amount     DECIMAL(12,2)
);

INSERT INTO sales_log
SELECT b.event_id, b.ts_event, b.product_id, b.quantity, b.amount
FROM sales_batch b
WHERE NOT EXISTS (SELECT 1 FROM sales_log l WHERE l.event_id = b.event_id)
QUALIFY row_number() OVER (PARTITION BY b.event_id ORDER BY b._arrival_seq) = 1;

CREATE OR REPLACE TABLE product_daily_units AS
SELECT product_id,
       CAST(ts_event AS DATE)               AS day,
       CAST(SUM(quantity) AS BIGINT)        AS units,
       CAST(SUM(amount) AS DECIMAL(18,2))   AS revenue
FROM sales_log
GROUP BY product_id, CAST(ts_event AS DATE);
