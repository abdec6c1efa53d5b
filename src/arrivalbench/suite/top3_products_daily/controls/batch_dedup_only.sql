-- Collapses repeated event_ids within the batch, adds the batch's per-product daily sums to the
-- running totals and re-ranks, all in one transaction; it keeps no record of orders already counted.
CREATE TABLE IF NOT EXISTS product_day_revenue (
    day        DATE,
    product_id INTEGER,
    revenue    DECIMAL(18,2),
    PRIMARY KEY (day, product_id)
);

BEGIN TRANSACTION;

INSERT INTO product_day_revenue
SELECT CAST(ts_event AS DATE) AS day, product_id, SUM(amount)
FROM (SELECT DISTINCT ON (event_id) * FROM sales_batch ORDER BY event_id, _arrival_seq)
GROUP BY ALL
ON CONFLICT (day, product_id) DO UPDATE SET revenue = product_day_revenue.revenue + excluded.revenue;

CREATE OR REPLACE TABLE top3_products_daily AS
SELECT day,
       row_number() OVER (PARTITION BY day ORDER BY revenue DESC, product_id) AS rank,
       product_id,
       revenue
FROM product_day_revenue
QUALIFY row_number() OVER (PARTITION BY day ORDER BY revenue DESC, product_id) <= 3;

COMMIT;
