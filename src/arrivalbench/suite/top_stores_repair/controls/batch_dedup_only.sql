-- The existing running totals with the ranking fixed: repeated event_ids within a load are
-- collapsed, and the totals and the board change in one transaction, but nothing records which
-- orders earlier loads already counted.
CREATE TABLE IF NOT EXISTS store_day_totals (
    store_id INTEGER,
    day      DATE,
    revenue  DECIMAL(18,2),
    PRIMARY KEY (store_id, day)
);

BEGIN TRANSACTION;

INSERT INTO store_day_totals
SELECT store_id, CAST(ts_event AS DATE) AS day, SUM(amount)
FROM (SELECT DISTINCT ON (event_id) * FROM sales_batch ORDER BY event_id, _arrival_seq)
GROUP BY ALL
ON CONFLICT (store_id, day) DO UPDATE
SET revenue = store_day_totals.revenue + excluded.revenue;

CREATE OR REPLACE TABLE top_stores_daily AS
SELECT day, rank, store_id, revenue
FROM (
    SELECT day, store_id, revenue,
           row_number() OVER (PARTITION BY day ORDER BY revenue DESC, store_id) AS rank
    FROM store_day_totals
)
WHERE rank <= 2;

COMMIT;
