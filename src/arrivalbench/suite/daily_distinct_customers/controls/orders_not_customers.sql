-- Rule control: the gold, except that customers counts orders, so a customer with several orders
-- at the store that day counts more than once.
CREATE TABLE IF NOT EXISTS order_history (
    event_id    BIGINT PRIMARY KEY,
    store_id    INTEGER,
    day         DATE,
    customer_id INTEGER,
    amount      DECIMAL(12,2)
);

CREATE TABLE IF NOT EXISTS store_daily_customers (
    store_id  INTEGER,
    day       DATE,
    customers BIGINT,
    revenue   DECIMAL(18,2),
    PRIMARY KEY (store_id, day)
);

BEGIN TRANSACTION;

MERGE INTO order_history h
USING (
    SELECT DISTINCT ON (event_id) event_id, store_id, CAST(ts_event AS DATE) AS day, customer_id, amount
    FROM sales_batch
    ORDER BY event_id, _arrival_seq
) b
ON h.event_id = b.event_id
WHEN NOT MATCHED THEN INSERT (event_id, store_id, day, customer_id, amount)
    VALUES (b.event_id, b.store_id, b.day, b.customer_id, b.amount);

CREATE TEMP TABLE touched AS
SELECT DISTINCT store_id, CAST(ts_event AS DATE) AS day FROM sales_batch;

DELETE FROM store_daily_customers s
USING touched t
WHERE s.store_id = t.store_id AND s.day = t.day;

INSERT INTO store_daily_customers
SELECT h.store_id, h.day, COUNT(h.customer_id), SUM(h.amount)
FROM order_history h
JOIN touched t ON t.store_id = h.store_id AND t.day = h.day
GROUP BY h.store_id, h.day;

COMMIT;
