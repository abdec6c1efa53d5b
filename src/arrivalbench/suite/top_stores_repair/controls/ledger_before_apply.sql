-- Stages the orders whose ids are not yet recorded, records their ids, then adds the staged orders
-- to the running totals and re-ranks; recording and adding are separate statements.
CREATE TABLE IF NOT EXISTS counted_orders (event_id BIGINT PRIMARY KEY);

CREATE TABLE IF NOT EXISTS store_day_totals (
    store_id INTEGER,
    day      DATE,
    revenue  DECIMAL(18,2),
    PRIMARY KEY (store_id, day)
);

CREATE TEMP TABLE staged AS
SELECT DISTINCT ON (event_id) event_id, store_id, CAST(ts_event AS DATE) AS day, amount
FROM sales_batch
WHERE event_id NOT IN (SELECT event_id FROM counted_orders)
ORDER BY event_id, _arrival_seq;

INSERT INTO counted_orders SELECT event_id FROM staged;

INSERT INTO store_day_totals
SELECT store_id, day, SUM(amount) FROM staged GROUP BY ALL
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
