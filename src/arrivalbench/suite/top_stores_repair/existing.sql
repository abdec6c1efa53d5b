-- top_stores_daily: the two leading stores of every day, ranked from running per-store daily
-- totals that each load adds its own sums to.
CREATE TABLE IF NOT EXISTS store_day_totals (
    store_id INTEGER,
    day      DATE,
    revenue  DECIMAL(18,2),
    orders   BIGINT,
    PRIMARY KEY (store_id, day)
);

INSERT INTO store_day_totals
SELECT store_id, CAST(ts_event AS DATE) AS day, SUM(amount), COUNT(*)
FROM sales_batch
GROUP BY ALL
ON CONFLICT (store_id, day) DO UPDATE
SET revenue = store_day_totals.revenue + excluded.revenue,
    orders  = store_day_totals.orders + excluded.orders;

CREATE OR REPLACE TABLE top_stores_daily AS
SELECT day, rank, store_id, revenue
FROM (
    SELECT day, store_id, revenue,
           row_number() OVER (PARTITION BY day ORDER BY orders DESC, store_id) AS rank
    FROM store_day_totals
)
WHERE rank <= 2;
