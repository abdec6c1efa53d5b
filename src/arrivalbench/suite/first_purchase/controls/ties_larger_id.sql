-- Rule control: the gold, except that of purchases sharing the earliest ts_event the one with the
-- larger event_id is the first (the text says the smallest).
CREATE TABLE IF NOT EXISTS customer_first (
    customer_id INTEGER PRIMARY KEY,
    ts_event    TIMESTAMP,
    event_id    BIGINT,
    store_id    INTEGER
);

CREATE TABLE IF NOT EXISTS customer_days (
    customer_id INTEGER,
    day         DATE,
    PRIMARY KEY (customer_id, day)
);

INSERT INTO customer_first
SELECT customer_id, ts_event, event_id, store_id
FROM sales_batch
QUALIFY row_number() OVER (PARTITION BY customer_id ORDER BY ts_event, event_id DESC) = 1
ON CONFLICT (customer_id) DO UPDATE
SET ts_event = excluded.ts_event,
    event_id = excluded.event_id,
    store_id = excluded.store_id
WHERE excluded.ts_event < customer_first.ts_event
   OR (excluded.ts_event = customer_first.ts_event AND excluded.event_id > customer_first.event_id);

INSERT INTO customer_days
SELECT DISTINCT customer_id, CAST(ts_event AS DATE)
FROM sales_batch
ON CONFLICT DO NOTHING;

CREATE OR REPLACE TABLE first_purchase AS
SELECT f.customer_id,
       f.ts_event AS first_purchase_at,
       f.store_id AS first_store_id,
       d.purchase_days
FROM customer_first f
JOIN (SELECT customer_id, count(*) AS purchase_days FROM customer_days GROUP BY customer_id) d
  ON d.customer_id = f.customer_id;
