-- Treats every day before the newest day already stored as closed: orders dated on an earlier day
-- are not loaded; otherwise keeps each order once and re-ranks from the stored orders.
CREATE TABLE IF NOT EXISTS sales_history (
    event_id   BIGINT PRIMARY KEY,
    day        DATE,
    product_id INTEGER,
    amount     DECIMAL(12,2)
);

INSERT INTO sales_history
SELECT DISTINCT ON (event_id) event_id, CAST(ts_event AS DATE), product_id, amount
FROM sales_batch
WHERE CAST(ts_event AS DATE) >= (SELECT coalesce(max(day), DATE '1900-01-01') FROM sales_history)
ORDER BY event_id, _arrival_seq
ON CONFLICT DO NOTHING;

CREATE OR REPLACE TABLE top3_products_daily AS
SELECT day, rank, product_id, revenue
FROM (
    SELECT day, product_id, SUM(amount) AS revenue,
           row_number() OVER (PARTITION BY day ORDER BY SUM(amount) DESC, product_id) AS rank
    FROM sales_history
    GROUP BY day, product_id
)
WHERE rank <= 3;
