-- Rule control: the gold, except that of two products with the same revenue the larger product_id
-- ranks first (the text says the smaller).
CREATE TABLE IF NOT EXISTS seen_orders (event_id BIGINT PRIMARY KEY);

CREATE TABLE IF NOT EXISTS product_day_revenue (
    day        DATE,
    product_id INTEGER,
    revenue    DECIMAL(18,2),
    PRIMARY KEY (day, product_id)
);

BEGIN TRANSACTION;

CREATE TEMP TABLE fresh AS
SELECT DISTINCT ON (event_id) event_id, CAST(ts_event AS DATE) AS day, product_id, amount
FROM sales_batch b
WHERE NOT EXISTS (SELECT 1 FROM seen_orders s WHERE s.event_id = b.event_id)
ORDER BY event_id, _arrival_seq;

INSERT INTO seen_orders SELECT event_id FROM fresh;

MERGE INTO product_day_revenue t
USING (SELECT day, product_id, SUM(amount) AS revenue FROM fresh GROUP BY day, product_id) s
ON t.day = s.day AND t.product_id = s.product_id
WHEN MATCHED THEN UPDATE SET revenue = t.revenue + s.revenue
WHEN NOT MATCHED THEN INSERT (day, product_id, revenue) VALUES (s.day, s.product_id, s.revenue);

CREATE OR REPLACE TABLE top3_products_daily AS
SELECT day,
       row_number() OVER (PARTITION BY day ORDER BY revenue DESC, product_id DESC) AS rank,
       product_id,
       revenue
FROM product_day_revenue
QUALIFY row_number() OVER (PARTITION BY day ORDER BY revenue DESC, product_id DESC) <= 3;

COMMIT;
