-- Keeps the first purchase received for each customer as the first purchase (later rows for a
-- known customer never replace it); purchase days are kept as a set of (customer, day) pairs.
CREATE TABLE IF NOT EXISTS customer_first (
    customer_id INTEGER PRIMARY KEY,
    ts_event    TIMESTAMP,
    store_id    INTEGER
);

CREATE TABLE IF NOT EXISTS customer_days (
    customer_id INTEGER,
    day         DATE,
    PRIMARY KEY (customer_id, day)
);

INSERT INTO customer_first
SELECT customer_id, ts_event, store_id
FROM sales_batch
QUALIFY row_number() OVER (PARTITION BY customer_id ORDER BY ts_event, event_id) = 1
ON CONFLICT (customer_id) DO NOTHING;

INSERT INTO customer_days
SELECT DISTINCT customer_id, CAST(ts_event AS DATE)
FROM sales_batch
ON CONFLICT DO NOTHING;

CREATE OR REPLACE TABLE first_purchase AS
SELECT f.customer_id, f.ts_event AS first_purchase_at, f.store_id AS first_store_id,
       (SELECT count(*) FROM customer_days d WHERE d.customer_id = f.customer_id) AS purchase_days
FROM customer_first f;
