-- Merges the orders whose ids are not yet recorded into the running per-product daily totals,
-- re-ranks, and only then records the ids, each step its own statement.
CREATE TABLE IF NOT EXISTS seen_orders (event_id BIGINT PRIMARY KEY);

CREATE TABLE IF NOT EXISTS product_day_revenue (
    day        DATE,
    product_id INTEGER,
    revenue    DECIMAL(18,2),
    PRIMARY KEY (day, product_id)
);

MERGE INTO product_day_revenue t
USING (
    SELECT CAST(ts_event AS DATE) AS day, product_id, SUM(amount) AS revenue
    FROM (
        SELECT DISTINCT ON (event_id) *
        FROM sales_batch
        WHERE event_id NOT IN (SELECT event_id FROM seen_orders)
        ORDER BY event_id, _arrival_seq
    )
    GROUP BY ALL
) s
ON t.day = s.day AND t.product_id = s.product_id
WHEN MATCHED THEN UPDATE SET revenue = t.revenue + s.revenue
WHEN NOT MATCHED THEN INSERT (day, product_id, revenue) VALUES (s.day, s.product_id, s.revenue);

CREATE OR REPLACE TABLE top3_products_daily AS
SELECT day,
       row_number() OVER (PARTITION BY day ORDER BY revenue DESC, product_id) AS rank,
       product_id,
       revenue
FROM product_day_revenue
QUALIFY row_number() OVER (PARTITION BY day ORDER BY revenue DESC, product_id) <= 3;

INSERT INTO seen_orders
SELECT DISTINCT event_id FROM sales_batch
ON CONFLICT DO NOTHING;
