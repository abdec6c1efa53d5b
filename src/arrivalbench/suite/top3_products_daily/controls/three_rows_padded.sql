-- Rule control: the gold, except that every day gets three rows: missing ranks are filled with the
-- next products by product_id and revenue 0 (the text says a day with fewer than three products
-- has only as many rows as it has products).
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
       row_number() OVER (PARTITION BY day ORDER BY revenue DESC, product_id) AS rank,
       product_id,
       revenue
FROM (
    SELECT d.day, p.product_id, coalesce(r.revenue, 0) AS revenue
    FROM (SELECT DISTINCT day FROM product_day_revenue) d
    CROSS JOIN (SELECT DISTINCT product_id FROM product_day_revenue) p
    LEFT JOIN product_day_revenue r ON r.day = d.day AND r.product_id = p.product_id
)
QUALIFY row_number() OVER (PARTITION BY day ORDER BY revenue DESC, product_id) <= 3;

COMMIT;
