-- Adds the orders whose ids are not yet recorded to running per-product daily totals, then records
-- their ids in a separate statement.
CREATE TABLE IF NOT EXISTS counted_orders (event_id BIGINT PRIMARY KEY);

CREATE TABLE IF NOT EXISTS product_daily_units (
    product_id INTEGER,
    day        DATE,
    units      BIGINT,
    revenue    DECIMAL(18,2),
    PRIMARY KEY (product_id, day)
);

INSERT INTO product_daily_units
SELECT product_id, CAST(ts_event AS DATE), SUM(quantity), SUM(amount)
FROM (
    SELECT DISTINCT ON (event_id) *
    FROM sales_batch
    WHERE event_id NOT IN (SELECT event_id FROM counted_orders)
    ORDER BY event_id, _arrival_seq
)
GROUP BY ALL
ON CONFLICT (product_id, day) DO UPDATE
SET units   = product_daily_units.units + excluded.units,
    revenue = product_daily_units.revenue + excluded.revenue;

INSERT OR IGNORE INTO counted_orders SELECT DISTINCT event_id FROM sales_batch;
