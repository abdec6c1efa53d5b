-- Rule control: the gold, except that of two stores with the same revenue the larger store_id
-- ranks first (the text says the smaller).
CREATE TABLE IF NOT EXISTS store_orders (
    event_id BIGINT PRIMARY KEY,
    store_id INTEGER,
    day      DATE,
    amount   DECIMAL(12,2)
);

INSERT OR IGNORE INTO store_orders
SELECT DISTINCT ON (event_id) event_id, store_id, CAST(ts_event AS DATE), amount
FROM sales_batch
ORDER BY event_id, _arrival_seq;

CREATE OR REPLACE TABLE top_stores_daily AS
WITH totals AS (
    SELECT day, store_id, SUM(amount) AS revenue
    FROM store_orders
    GROUP BY day, store_id
)
SELECT day, rank, store_id, revenue
FROM (
    SELECT day, store_id, revenue,
           row_number() OVER (PARTITION BY day ORDER BY revenue DESC, store_id DESC) AS rank
    FROM totals
)
WHERE rank <= 2;
